package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpfn/mcpfn/shared/text"
)

const (
	// MaxBytes is the largest schema Check accepts, in bytes.
	MaxBytes = 256 << 10
	// MaxDepth is the deepest nesting of JSON objects and arrays Check
	// accepts; the root object is level 1.
	MaxDepth = 100
)

// ErrRefused is wrapped by every error Check returns.
var ErrRefused = errors.New("schema refused")

// RulesVersion names the rules Check applies. It changes whenever a
// verdict could change: a rule, the meta-schema, or the jsonschema-go
// release that compiles (TestRulesVersionNamesTheCompiler). A verdict
// stored under another RulesVersion is never reused.
const RulesVersion = "1/jsonschema-go@v0.4.3"

// The rules, each the first word of a refusal after "schema refused: ".
const (
	ruleSize     = "size"
	ruleDepth    = "depth"
	ruleJSON     = "json"
	ruleRoot     = "root"
	ruleCompile  = "compile"
	ruleRemote   = "remote-ref"
	ruleDangling = "dangling-ref"
	ruleCyclic   = "cyclic-ref"
)

// maxDetail bounds the part of a refusal quoted from the schema or from
// jsonschema-go.
const maxDetail = 300

// draft202012 is the dialect every schema is compiled under.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// Check reports whether schema (compact JSON bytes of one tool's input or output schema) is one a model request can carry; the error says which rule it broke and wraps ErrRefused.
// The rules, each named by the first word of a refusal:
//   - size: at most MaxBytes; depth: at most MaxDepth; json: one JSON value
//   - root: an object with "type": "object"
//   - compile: valid against the draft 2020-12 meta-schema, whatever
//     "$schema" says; patterns compile with Go's regexp; no $id or anchor
//     is declared twice; with a reference, jsonschema-go resolves it too
//   - remote-ref: each $ref and $dynamicRef is a fragment ("#…")
//   - dangling-ref: each resolves within schema
//   - cyclic-ref: no chain of references and in-place applicators (allOf,
//     not, ...) returns to its start without entering a property or item
//
// Check never fetches, and is safe for concurrent use.
func Check(schema []byte) error { return check(schema, false) }

// check is Check; with full, every schema with a reference is resolved by
// jsonschema-go, as before plainResolves (tests compare the two).
func check(schema []byte, full bool) error {
	if len(schema) > MaxBytes {
		return refuse(ruleSize, "%d bytes, over the %d allowed", len(schema), MaxBytes)
	}
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		// encoding/json refuses past 10,000 levels; call that too deep.
		if strings.Contains(err.Error(), "exceeded max depth") {
			return refuse(ruleDepth, "nested more than %d levels", MaxDepth)
		}
		return refuse(ruleJSON, "%s", err)
	}
	if d := depth(doc); d > MaxDepth {
		return refuse(ruleDepth, "nested %d levels, over the %d allowed", d, MaxDepth)
	}
	if obj, ok := doc.(map[string]any); !ok || obj["type"] != "object" {
		return refuse(ruleRoot, `not a JSON object with "type": "object"`)
	}
	g, err := index(doc)
	if err != nil {
		return err
	}
	if !fastAccepts(doc) {
		if err := metaSchema.Validate(doc); err != nil {
			return refuse(ruleCompile, "not a draft 2020-12 schema: %s", metaRefusal(doc, err))
		}
	}
	if g.refs > 0 && (full || !plainResolves(schema, doc)) {
		// Resolve again with the real implementation; without a reference
		// it would only repeat the checks above (DESIGN.md, "Cost"), and
		// a plain schema's it is known to pass ("Resolving without
		// jsonschema-go").
		var root jsonschema.Schema
		if err := json.Unmarshal(schema, &root); err != nil {
			return refuse(ruleCompile, "%s", err)
		}
		root.Schema = draft202012
		if _, err := root.Resolve(&jsonschema.ResolveOptions{Loader: noLoad}); err != nil {
			return refuse(ruleCompile, "%s", err)
		}
	}
	return g.acyclic()
}

// refuse returns the error for a broken rule.
func refuse(rule, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrRefused, rule, text.Truncate(fmt.Sprintf(format, args...), maxDetail))
}

// errNoLoad is what noLoad answers.
var errNoLoad = errors.New("remote schemas are never loaded")

// noLoad is the Loader jsonschema-go is given: it loads nothing.
// Check refuses every reference that is not a fragment before Resolve, so
// it is not called (TestRemoteRefsAreNeverFetched).
func noLoad(*url.URL) (*jsonschema.Schema, error) { return nil, errNoLoad }

// depth returns how deeply v, a value decoded by encoding/json into any,
// nests objects and arrays; a scalar is 0.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

// validating matches the frames jsonschema-go's Validate wraps its errors
// in: "validating https://json-schema.org/draft/2020-12/schema: ".
var validating = regexp.MustCompile(`validating \S+: `)

// metaDetail returns a meta-schema validation error without the frames
// that name meta-schema locations, on one line, so that what is left is
// the keyword that failed and why.
func metaDetail(err error) string {
	return strings.Join(strings.Fields(validating.ReplaceAllString(err.Error(), "")), " ")
}
