package schema

import (
	"encoding/json"
	"math"
	"regexp"
)

// The patterns of the draft 2020-12 meta-schema (meta/core.json), compiled
// as jsonschema-go compiles them, with Go's regexp.
var (
	idPattern     = regexp.MustCompile(`^[^#]*#?$`)
	anchorPattern = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)
)

// metaKeywords are the keywords the draft 2020-12 meta-schema constrains:
// the properties of its root and vocabularies, read from metaFiles.
var metaKeywords = func() map[string]bool {
	kws := map[string]bool{}
	for _, part := range []string{"schema", "meta/core", "meta/applicator", "meta/unevaluated",
		"meta/validation", "meta/meta-data", "meta/format-annotation", "meta/content"} {
		b, err := metaFiles.ReadFile("metaschema/" + part + ".json")
		var m struct{ Properties map[string]json.RawMessage }
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil || len(m.Properties) == 0 {
			panic("schema: the embedded meta-schema " + part + " has no keywords")
		}
		for k := range m.Properties {
			kws[k] = true
		}
	}
	return kws
}()

// fastAccepts reports whether s, a value decoded by encoding/json in a
// schema's place, is certainly valid against the draft 2020-12
// meta-schema. It knows every rule the meta-schema makes of the keywords
// it constrains; false means "not known", and Check asks jsonschema-go
// (DESIGN.md, "Cost"). It never answers true where jsonschema-go would
// refuse (TestFastAcceptsOnlyWhatTheMetaSchemaAccepts).
func fastAccepts(s any) bool {
	switch s := s.(type) {
	case bool:
		return true
	case map[string]any:
		for k, v := range s {
			if !fastKeyword(k, v) {
				return false
			}
		}
		return true
	}
	return false
}

// fastKeyword reports whether keyword k with value v certainly keeps to
// the meta-schema's rule for k; a keyword it does not constrain keeps to
// it whatever v is.
func fastKeyword(k string, v any) bool {
	switch k {
	case "type":
		return simpleTypes(v)
	case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
		return eachValue(v, fastAccepts)
	case "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema":
		return fastAccepts(v)
	case "prefixItems", "allOf", "anyOf", "oneOf":
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return false
		}
		for _, c := range a {
			if !fastAccepts(c) {
				return false
			}
		}
		return true
	case "title", "description", "$comment", "format", "contentEncoding", "contentMediaType", "pattern",
		"$schema", "$ref", "$dynamicRef", "$recursiveRef":
		_, ok := v.(string)
		return ok
	case "$id":
		s, ok := v.(string)
		return ok && idPattern.MatchString(s)
	case "$anchor", "$dynamicAnchor", "$recursiveAnchor":
		s, ok := v.(string)
		return ok && anchorPattern.MatchString(s)
	case "default", "const":
		return true
	case "enum", "examples":
		_, ok := v.([]any)
		return ok
	case "deprecated", "readOnly", "writeOnly", "uniqueItems":
		_, ok := v.(bool)
		return ok
	case "multipleOf":
		f, ok := v.(float64)
		return ok && f > 0
	case "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum":
		_, ok := v.(float64)
		return ok
	case "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties":
		f, ok := v.(float64)
		if !ok || f < 0 {
			return false
		}
		_, frac := math.Modf(f) // jsonschema-go's test of an integer
		return frac == 0
	case "required":
		return uniqueStrings(v)
	case "dependentRequired":
		return eachValue(v, uniqueStrings)
	case "dependencies":
		return eachValue(v, func(c any) bool { return fastAccepts(c) || uniqueStrings(c) })
	case "$vocabulary":
		return eachValue(v, func(c any) bool { _, ok := c.(bool); return ok })
	}
	return !metaKeywords[k]
}

// eachValue reports whether v is an object whose every member value ok
// accepts.
func eachValue(v any, ok func(any) bool) bool {
	m, isMap := v.(map[string]any)
	if !isMap {
		return false
	}
	for _, c := range m {
		if !ok(c) {
			return false
		}
	}
	return true
}

// uniqueStrings reports whether v is an array of distinct strings.
func uniqueStrings(v any) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	seen := make(map[string]bool, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// simpleTypes reports whether v is a type name, or a non-empty array of
// distinct ones.
func simpleTypes(v any) bool {
	if s, ok := v.(string); ok {
		return typeBit(s) != 0
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	seen := 0
	for _, e := range a {
		s, _ := e.(string)
		b := typeBit(s)
		if b == 0 || seen&b != 0 {
			return false
		}
		seen |= b
	}
	return true
}

// typeBit is a bit per JSON Schema type name; 0 for any other string.
func typeBit(s string) int {
	switch s {
	case "array":
		return 1
	case "boolean":
		return 2
	case "integer":
		return 4
	case "null":
		return 8
	case "number":
		return 16
	case "object":
		return 32
	case "string":
		return 64
	}
	return 0
}
