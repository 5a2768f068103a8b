package catalogtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// MappedName is the model name the catalog's mapping gives name with
// digits hex digits (DESIGN.md): every character outside [A-Za-z0-9_-]
// becomes '_', the result is cut to 63-digits bytes, then '_' and the
// first digits hex digits of sha256(name) follow.
func MappedName(name string, digits int) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() == 63-digits {
			break
		}
		if r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	return b.String() + "_" + hex.EncodeToString(sum[:])[:digits]
}

// ModelNames maps each tool's name to its model name.
func ModelNames(tools []mcp.Tool) map[string]string {
	m := make(map[string]string, len(tools))
	for _, t := range tools {
		m[t.Name] = t.ModelName
	}
	return m
}

func hint(b bool) *bool { return &b }

// FullTool returns a tool named name with every optional field set; the
// JSON carries characters encoding/json would escape.
func FullTool(name, tag string) mcp.Tool {
	t := Tool(name, tag)
	t.Title = "Full <" + tag + "> & more"
	t.OutputSchema = json.RawMessage(`{"type":"object","properties":{"html":{"const":"<&>` + tag + `"}}}`)
	t.Annotations = &mcp.Annotations{
		ReadOnlyHint:    hint(true),
		DestructiveHint: hint(false),
		Other:           json.RawMessage(`{"title":"<b>` + tag + `</b>","x-vendor":[1,2]}`),
	}
	t.Meta = json.RawMessage(`{"ui/resourceUri":"ui://widget/` + tag + `"}`)
	return t
}
