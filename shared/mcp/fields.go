package mcp

import (
	"bytes"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// A listed tool's optional fields: title, annotations, outputSchema and
// _meta. Each is judged from the raw entry where there is one, since the
// SDK's decoding loses what a hint left out and every annotation key it
// does not name; values are taken from the SDK's decoding where it has
// them. null stands for absent throughout.

// Bounds on the optional fields a Tool holds, in bytes: of the title's
// text, and of the compact JSON of the rest. A raw value past its bound is
// refused before it is decoded or encoded.
const (
	maxTitleBytes        = 1 << 10
	maxAnnotationsBytes  = 16 << 10
	maxOutputSchemaBytes = 256 << 10
	maxMetaBytes         = 64 << 10
)

// Refusal reasons for the optional fields; the figures are the bounds
// above (TestOptionalFieldReasonsNameTheirBounds).
const (
	reasonTitle            = "title: not a string"
	reasonTitleSize        = "title: longer than 1024 bytes"
	reasonAnnotations      = "annotations: not a JSON object"
	reasonAnnotationsSize  = "annotations: more than 16384 bytes of JSON"
	reasonAnnotationsTitle = "annotations: title is not a string"
	reasonHint             = "annotations: readOnlyHint, destructiveHint, idempotentHint and openWorldHint must each be a boolean"
	reasonOutputSchema     = "output_schema: outputSchema is not a JSON object"
	reasonOutputSchemaSize = "output_schema: outputSchema is more than 262144 bytes of JSON"
	reasonMeta             = "meta: _meta is not a JSON object"
	reasonMetaSize         = "meta: _meta is more than 65536 bytes of JSON"
)

// compactFlags make segmentio write what json.Marshal writes for a value
// decoded from JSON (FuzzRemarshalSchema).
const compactFlags = segjson.EscapeHTML | segjson.SortMapKeys

// fill sets tool's optional fields from t, the SDK's decoding of the
// entry, and raw, the entry as read (nil when there is none), or returns
// the reason the entry is refused.
func (v *validator) fill(tool *Tool, t *sdk.Tool, raw *rawTool) string {
	if raw != nil {
		if r := raw.Title.last(); r != nil && !isNull(r) && r[0] != '"' {
			return reasonTitle
		}
		if r := raw.Meta.last(); r != nil && !isNull(r) && r[0] != '{' {
			return reasonMeta
		}
		if len(raw.Meta.last()) > maxMetaBytes {
			return reasonMetaSize
		}
		if len(raw.OutputSchema.raw) > maxOutputSchemaBytes {
			return reasonOutputSchemaSize
		}
	}
	if len(t.Title) > maxTitleBytes {
		return reasonTitleSize
	}
	schema, isObject := t.OutputSchema.(map[string]any)
	if t.OutputSchema != nil && !isObject {
		return reasonOutputSchema
	}

	var reason string
	if raw != nil {
		tool.Annotations, reason = v.rawAnnotations(raw.Annotations.last())
	} else {
		tool.Annotations, reason = v.sdkAnnotations(t.Annotations)
	}
	if reason != "" {
		return reason
	}
	if isObject {
		if tool.OutputSchema, reason = v.compact(schema, maxOutputSchemaBytes, reasonOutputSchemaSize); reason != "" {
			return reason
		}
	}
	if len(t.Meta) > 0 {
		if tool.Meta, reason = v.compact(map[string]any(t.Meta), maxMetaBytes, reasonMetaSize); reason != "" {
			return reason
		}
	}
	tool.Title = t.Title
	return ""
}

// rawAnnotations reads a raw annotations value (nil when absent): the four
// hints, typed, and every other key into Other. It returns nil when there
// is neither.
func (v *validator) rawAnnotations(r []byte) (*Annotations, string) {
	if r == nil || isNull(r) {
		return nil, ""
	}
	if r[0] != '{' {
		return nil, reasonAnnotations
	}
	if len(r) > maxAnnotationsBytes {
		return nil, reasonAnnotationsSize
	}
	var m map[string]any
	if !decode(r, &m) {
		return nil, reasonAnnotations
	}
	var a Annotations
	for _, h := range [...]struct {
		key  string
		hint **bool
	}{
		{"readOnlyHint", &a.ReadOnlyHint},
		{"destructiveHint", &a.DestructiveHint},
		{"idempotentHint", &a.IdempotentHint},
		{"openWorldHint", &a.OpenWorldHint},
	} {
		value, ok := m[h.key]
		if !ok {
			continue
		}
		delete(m, h.key)
		switch b := value.(type) {
		case nil:
		case bool:
			*h.hint = &b
		default:
			return nil, reasonHint
		}
	}
	if title, ok := m["title"]; ok {
		if _, isString := title.(string); !isString && title != nil {
			return nil, reasonAnnotationsTitle
		}
	}
	if len(m) > 0 {
		var reason string
		if a.Other, reason = v.compact(m, maxAnnotationsBytes, reasonAnnotationsSize); reason != "" {
			return nil, reason
		}
	}
	return nonEmpty(&a), ""
}

// sdkAnnotations is rawAnnotations for an entry the SDK alone decoded: a
// false readOnlyHint or idempotentHint cannot be told from an absent one
// there, and is left out, and the annotations' title is the only other
// key it keeps.
func (v *validator) sdkAnnotations(in *sdk.ToolAnnotations) (*Annotations, string) {
	if in == nil {
		return nil, ""
	}
	a := Annotations{DestructiveHint: cloneBool(in.DestructiveHint), OpenWorldHint: cloneBool(in.OpenWorldHint)}
	if in.ReadOnlyHint {
		a.ReadOnlyHint = cloneBool(&in.ReadOnlyHint)
	}
	if in.IdempotentHint {
		a.IdempotentHint = cloneBool(&in.IdempotentHint)
	}
	if in.Title != "" {
		var reason string
		if a.Other, reason = v.compact(map[string]any{"title": in.Title}, maxAnnotationsBytes, reasonAnnotationsSize); reason != "" {
			return nil, reason
		}
	}
	return nonEmpty(&a), ""
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// nonEmpty returns a, or nil when it holds nothing.
func nonEmpty(a *Annotations) *Annotations {
	if a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil && a.Other == nil {
		return nil
	}
	return a
}

// compact returns value, a value decoded from JSON, as compact JSON with
// sorted keys, kept in the arena; or the reason it is refused: tooBig past
// limit bytes.
func (v *validator) compact(value any, limit int, tooBig string) (json.RawMessage, string) {
	var err error
	if v.buf, err = segjson.Append(v.buf[:0], value, compactFlags); err != nil {
		return nil, reasonMarshal + err.Error()
	}
	if len(v.buf) > limit {
		return nil, tooBig
	}
	return v.keep(v.buf), ""
}

// replacement is a raw value inside a message and what the SDK is handed
// in its place.
type replacement struct {
	value []byte
	with  string
}

// replacements appends to out what the SDK is handed in place of t's raw
// values: standIn for an input schema it has no use for (see
// slimToolsList), and null for a title, annotations or _meta its decoder
// refuses, which would fail the whole page; the validator refuses such an
// entry from the raw page.
func (t rawTool) replacements(out []replacement) []replacement {
	if in := t.InputSchema; in.n == 1 && len(in.raw) > len(standIn) &&
		!bytes.Contains(in.raw, []byte("x-mcp-header")) && !bytes.Contains(in.raw, []byte(`\u`)) {
		out = append(out, replacement{in.raw, standIn})
	}
	for _, f := range [...]struct {
		values members
		takes  func([]byte) bool
	}{
		{t.Title, sdkTakesTitle},
		{t.Annotations, sdkTakesAnnotations},
		{t.Meta, sdkTakesMeta},
	} {
		for _, value := range f.values {
			if !isNull(value) && !f.takes(value) {
				out = append(out, replacement{value, "null"})
			}
		}
	}
	return out
}

// sdkTakesTitle, sdkTakesAnnotations and sdkTakesMeta report whether
// go-sdk's decoder accepts a value that is not null as a listed tool's
// title, annotations or _meta (TestSDKFailsPageOnIllTypedField).
func sdkTakesTitle(value []byte) bool { return value[0] == '"' }

func sdkTakesAnnotations(value []byte) bool { return decode(value, &sdk.ToolAnnotations{}) }

func sdkTakesMeta(value []byte) bool { return value[0] == '{' }
