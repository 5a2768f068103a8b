package schema

import (
	"maps"
	"slices"
)

// maxNarrowing bounds the validations metaRefusal makes beyond Check's
// own, so a refusal costs at most that many more validations of parts of
// the schema.
const maxNarrowing = 32

// metaRefusal returns the detail of metaSchema's refusal err of doc: the
// first rule doc breaks in a fixed order (keywords by name, a subschema
// that breaks a rule before its keyword's own shape, an object's entries by
// key, items in order). jsonschema-go reads an object's members in map
// order, so a schema breaking two rules would be refused for either at
// random, and the catalog, whose content hash covers refusals, would take
// an unchanged listing for a changed one (TestRefusalDetailIsStable). Past
// maxNarrowing validations it reports the part it has narrowed to.
func metaRefusal(doc any, err error) string {
	n := 0
	broken := func(v any) error {
		n++
		return metaSchema.Validate(v)
	}
	cur, curErr := doc, err
narrowing:
	for n < maxNarrowing {
		s, ok := cur.(map[string]any)
		if !ok {
			break
		}
		for _, name := range slices.Sorted(maps.Keys(s)) {
			one := map[string]any{name: s[name]}
			e := broken(one)
			if e == nil {
				continue
			}
			var sub any
			var subErr error
			children(one, func(c any, _ applies, _ ...string) {
				if sub == nil && n < maxNarrowing {
					if e := broken(c); e != nil {
						sub, subErr = c, e
					}
				}
			})
			if sub != nil {
				cur, curErr = sub, subErr
				continue narrowing
			}
			cur, curErr = one, e
			if entries, ok := s[name].(map[string]any); ok {
				for _, key := range slices.Sorted(maps.Keys(entries)) {
					if n >= maxNarrowing {
						break
					}
					entry := map[string]any{name: map[string]any{key: entries[key]}}
					if e := broken(entry); e != nil {
						cur, curErr = entry, e
						break
					}
				}
			}
			break narrowing
		}
		break // no keyword alone is broken: the object as a whole is
	}
	return metaDetail(curErr)
}
