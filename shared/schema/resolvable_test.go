package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// agrees fails t when Check, trusting plainResolves, gives doc another
// verdict or message than Check resolving every schema with a reference
// through jsonschema-go; it reports whether the shortcut was taken and
// whether jsonschema-go refused.
func agrees(t testing.TB, doc []byte) (plain, refused bool) {
	t.Helper()
	got, want := check(doc, false), check(doc, true)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: Check says %v, resolving with jsonschema-go %v", doc, got, want)
	}
	if v := mustDecode(doc); v != nil {
		if g, err := index(v); err == nil && g.refs > 0 {
			plain = plainResolves(doc, v)
		}
	}
	return plain, want != nil
}

func mustDecode(doc []byte) any {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil
	}
	return v
}

// refWrappers put a generated schema where a reference reaches it, and
// reach into it.
var refWrappers = []string{
	`{"type":"object","properties":{"r":{"$ref":"#/$defs/d"}},"$defs":{"d":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/definitions/d"}},"definitions":{"d":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/properties/s"},"s":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/properties/s/properties/p"},"s":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/properties/s/items"},"s":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/properties/s/anyOf/0"},"s":%s}}`,
	`{"type":"object","properties":{"r":{"$ref":"#/$defs/d"}},"$defs":{"d":%s},"definitions":{}}`,
	`{"type":"object","$schema":"http://json-schema.org/draft-07/schema#","properties":{"r":{"$ref":"#/$defs/d"}},"$defs":{"d":%s}}`,
}

// TestPlainResolvesAgreesWithJSONSchemaGo: every keyword the meta-schema
// names, case variants of some and keywords it does not name, with values
// of every shape, below a reference at several places, each keyword twice
// in one object, and the realistic
// schemas of the other tests: Check gives each the verdict and message it
// gives resolving through jsonschema-go, and takes the shortcut for every
// realistic schema with a reference and a third of the accepted cases.
func TestPlainResolvesAgreesWithJSONSchemaGo(t *testing.T) {
	kws := slices.Sorted(maps.Keys(metaKeywords))
	kws = append(kws, "unknownKeyword", "additionalItems", "propertyOrder", "Type", "MaxLength", "Minimum",
		"$Ref", "Properties", "DEFS", "Items", "Required", "Enum")
	values := append(slices.Clone(metaValues), `2147483647`, `2147483648`, `1E2`, `1.5e1`, `2.0`, `-0.0`,
		`"#/$defs/d"`, `"#/properties/p"`, `"#/$defs/x"`, `"#"`, `{"p":{"type":"string"}}`, `{"p":{"$ref":"#"}}`)
	var cases, plain, ok, plainOK int
	try := func(doc []byte) {
		p, refused := agrees(t, doc)
		cases++
		if !refused {
			ok++
			if p {
				plainOK++
			}
		}
		if p {
			plain++
		}
	}
	short := []string{`"x"`, `-1`, `1.5`, `1e2`, `3000000000`, `["a","a"]`, `["a",1]`, `{"type":"strng"}`, `{}`, `{"a":{}}`, `"#/$defs/d"`, `true`}
	for i, w := range refWrappers {
		positions, vs := metaPositions[:3], values
		if i > 0 { // the rules are tried in the first; the others move the reference
			positions, vs = metaPositions[:1], short
		}
		for _, pos := range positions {
			for _, kw := range kws {
				for _, v := range vs {
					try(fmt.Appendf(nil, w, fmt.Sprintf(pos, fmt.Sprintf("%q:%s", kw, v))))
				}
			}
		}
		for _, v := range values {
			try(fmt.Appendf(nil, w, v))
		}
	}
	for _, kw := range kws { // a keyword twice: encoding/json keeps the last, jsonschema-go may fail on the first
		for _, first := range short {
			for _, last := range []string{`1`, `"x"`, `{}`} {
				try(fmt.Appendf(nil, refWrappers[0], fmt.Sprintf("{%q:%s,%[1]q:%[3]s}", kw, first, last)))
			}
		}
	}
	realistic := catalog()
	for i := range 1000 {
		realistic = append(realistic, distinct(i))
	}
	for _, doc := range realistic {
		if p, refused := agrees(t, doc); !p && !refused && bytes.Contains(doc, []byte(`"$ref"`)) {
			t.Errorf("%s: not taken by plainResolves", doc)
		}
	}
	for _, s := range accepted {
		try([]byte(s.schema))
	}
	t.Logf("%d cases: %d with a reference taken by plainResolves; jsonschema-go accepts %d, %d of them plain", cases, plain, ok, plainOK)
	if plainOK < ok/3 {
		t.Errorf("plainResolves vouches for %d of the %d accepted; want at least a third", plainOK, ok)
	}
}

// FuzzPlainResolves: Check gives every document the verdict and message it
// gives resolving through jsonschema-go.
func FuzzPlainResolves(f *testing.F) {
	for _, w := range refWrappers {
		f.Add(fmt.Appendf(nil, w, `{"type":"object","properties":{"p":{"type":"string","maxLength":5}}}`))
	}
	f.Add(fmt.Appendf(nil, refWrappers[0], `{"maxLength":1,"maxLength":2}`))
	f.Add(distinct(2))
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 4096 {
			return
		}
		agrees(t, doc)
	})
}
