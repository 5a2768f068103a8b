package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Definition is what pinning compares of a tool: the SHA-256 of each part
// of its definition, canonicalised (RFC 8785), so that reordering a
// schema's keys or respelling a number is no change. _meta is not part of
// it: servers put per-listing data there.
type Definition struct {
	Name        string `json:"name" dynamodbav:"name"`
	Title       string `json:"title" dynamodbav:"title"`
	Description string `json:"description" dynamodbav:"description"`
	InputSchema string `json:"input_schema" dynamodbav:"input_schema"`
	Output      string `json:"output_schema" dynamodbav:"output_schema"`
	Annotations string `json:"annotations" dynamodbav:"annotations"`
}

// DefinitionOf returns t's Definition.
func DefinitionOf(t mcp.Tool) Definition {
	return Definition{
		Name:        sum([]byte(t.Name)),
		Title:       sum([]byte(t.Title)),
		Description: sum([]byte(t.Description)),
		InputSchema: sum(canonical(t.InputSchema)),
		Output:      sum(canonical(t.OutputSchema)),
		Annotations: sum(canonical(annotationsJSON(t.Annotations))),
	}
}

// Hash is the tool's definition hash: the SHA-256 of its parts' hashes.
func (d Definition) Hash() string {
	b, _ := json.Marshal(d) // six strings: cannot fail
	return sum(b)
}

// Changed names the parts of the definition that differ from was, in the
// order of the fields above; none when the definitions are the same.
func (d Definition) Changed(was Definition) []string {
	var out []string
	for _, f := range []struct {
		name     string
		now, was string
	}{
		{"name", d.Name, was.Name},
		{"title", d.Title, was.Title},
		{"description", d.Description, was.Description},
		{"input schema", d.InputSchema, was.InputSchema},
		{"output schema", d.Output, was.Output},
		{"annotations", d.Annotations, was.Annotations},
	} {
		if f.now != f.was {
			out = append(out, f.name)
		}
	}
	return out
}

// canonical is raw canonicalised by RFC 8785; raw itself when it is not
// valid JSON (the listing reader refuses such schemas before this).
func canonical(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	v := jsontext.Value(append([]byte(nil), raw...))
	if v.Canonicalize() != nil {
		return raw
	}
	return v
}

// annotationsJSON is a as one JSON object: its hints and its other keys.
func annotationsJSON(a *mcp.Annotations) []byte {
	if a == nil {
		return nil
	}
	m := map[string]any{}
	if len(a.Other) > 0 {
		_ = json.Unmarshal(a.Other, &m) // a compact object, as the listing reader wrote it
	}
	for k, h := range map[string]*bool{"readOnlyHint": a.ReadOnlyHint, "destructiveHint": a.DestructiveHint, "idempotentHint": a.IdempotentHint, "openWorldHint": a.OpenWorldHint} {
		if h != nil {
			m[k] = *h
		}
	}
	b, _ := json.Marshal(m) // from JSON and bools: cannot fail
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
