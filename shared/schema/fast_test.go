package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// metaValues are keyword values of every JSON type and of the shapes the
// meta-schema's rules tell apart: integers, negatives, fractions, URIs and
// fragments, anchors, patterns, unique and repeated items, type names,
// schemas and non-schemas.
var metaValues = []string{`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `0.5`, `1.5`, `1.0`, `1e2`, `3000000000`,
	`""`, `"x"`, `"string"`, `"#"`, `"a#"`, `"a#b"`, `"#frag"`, `"#/$defs/a"`, `"a b"`, `"a.b-c"`, `"^[a-z]+$"`,
	`"(unclosed"`, `"https://example.com/a"`, `"https://example.com/a#x"`, `"_a"`, `"1a"`, `[]`, `[1]`, `[1,1.0]`,
	`["a","a"]`, `["a","b"]`, `["a",1]`, `["string","number"]`, `["string","string"]`, `["strng"]`, `[{"type":"strng"}]`,
	`[{}]`, `[true,{"minimum":"1"}]`, `{}`, `{"type":"strng"}`, `{"a":{}}`, `{"a":{"type":"strng"}}`, `{"a":"b"}`,
	`{"a":["b","b"]}`, `{"a":["b"]}`, `{"a":true}`, `{"a":1}`, `{"https://x":true}`, `{"a b":1}`, `{"^a(":{}}`}

// metaPositions place a keyword and its value in a schema: at the root,
// and below each kind of keyword that holds schemas.
var metaPositions = []string{`{%s}`, `{"properties":{"p":{%s}}}`, `{"items":{%s}}`, `{"prefixItems":[true,{%s}]}`,
	`{"$defs":{"d":{%s}}}`, `{"definitions":{"d":{%s}}}`, `{"dependencies":{"d":{%s}}}`, `{"dependentSchemas":{"d":{%s}}}`,
	`{"anyOf":[{%s}]}`, `{"not":{%s}}`, `{"contentSchema":{%s}}`, `{"unevaluatedProperties":{%s}}`, `{"patternProperties":{"^a":{%s}}}`}

// sound fails t when fastAccepts accepts doc and the meta-schema, as
// jsonschema-go validates it, does not; it reports what each said.
func sound(t testing.TB, doc []byte) (fast, meta bool) {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return false, false
	}
	err := metaSchema.Validate(v)
	fast, meta = fastAccepts(v), err == nil
	if fast && !meta {
		t.Errorf("%s: fastAccepts, but the meta-schema refuses it: %v", doc, err)
	}
	return fast, meta
}

// TestFastAcceptsOnlyWhatTheMetaSchemaAccepts: every keyword the
// meta-schema names, and two it does not, with values of every shape, at
// the root and below every schema-holding keyword, and whole documents of
// every type: fastAccepts accepts none the meta-schema refuses, and all but
// a few it accepts.
func TestFastAcceptsOnlyWhatTheMetaSchemaAccepts(t *testing.T) {
	kws := slices.Sorted(maps.Keys(metaKeywords))
	if len(kws) < 50 {
		t.Fatalf("only %d keywords", len(kws))
	}
	kws = append(kws, "unknownKeyword", "additionalItems")
	var cases, metaOK, fastOK int
	try := func(doc []byte) {
		fast, meta := sound(t, doc)
		cases++
		if meta {
			metaOK++
		}
		if fast {
			fastOK++
		}
	}
	for _, pos := range metaPositions {
		values := metaValues
		if pos != metaPositions[0] && pos != metaPositions[1] {
			values = []string{`"x"`, `-1`, `1.5`, `["a","a"]`, `{"type":"strng"}`, `{}`} // the rules are tried at the first two
		}
		for _, kw := range kws {
			for _, v := range values {
				try(fmt.Appendf(nil, pos, fmt.Sprintf("%q:%s", kw, v)))
			}
		}
	}
	for _, v := range metaValues {
		try([]byte(v))
	}
	t.Logf("%d cases: the meta-schema accepts %d, fastAccepts %d", cases, metaOK, fastOK)
	if fastOK < metaOK*9/10 {
		t.Errorf("fastAccepts accepts %d of the %d the meta-schema accepts; want at least 90%%", fastOK, metaOK)
	}
}

// TestFastAcceptsRealisticSchemas: the schemas of the other tests and
// benchmarks take the fast path.
func TestFastAcceptsRealisticSchemas(t *testing.T) {
	var docs [][]byte
	for _, s := range accepted {
		docs = append(docs, []byte(s.schema))
	}
	docs = append(docs, catalog()...)
	for i := range 1000 {
		docs = append(docs, distinct(i))
	}
	for _, doc := range docs {
		if fast, meta := sound(t, doc); meta && !fast {
			t.Errorf("%s: the meta-schema accepts it, fastAccepts does not", doc)
		}
	}
}

// FuzzFastAccepts: fastAccepts accepts no document the meta-schema
// refuses, and a refused document gets the same detail twice.
func FuzzFastAccepts(f *testing.F) {
	for _, v := range metaValues {
		f.Add(fmt.Appendf(nil, `{"properties":{"a":{"type":"object","items":%s}}}`, v))
		f.Add(fmt.Appendf(nil, `{"$defs":{"a":{"minLength":%s,"required":%[1]s}}}`, v))
	}
	f.Add(distinct(2))
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 4096 {
			return
		}
		sound(t, doc)
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return
		}
		if err := metaSchema.Validate(v); err != nil {
			if a, b := metaRefusal(v, err), metaRefusal(v, err); a != b {
				t.Errorf("%s: refused for %q, then %q", doc, a, b)
			}
		}
	})
}
