package schema

import "math"

// How plainResolves reads the value of a keyword it knows.
const (
	kwSchema  = iota // one schema
	kwSchemas        // a non-empty array of schemas
	kwMap            // an object of schemas
	kwInt            // an integer jsonschema-go keeps in an int32
	kwString
	kwNumber
	kwBool
	kwArray   // any array: enum, examples
	kwStrings // an array of strings: required
	kwAny     // any value: const, default
	kwStringsMap
	kwType // a string or an array of strings
)

// plainKeywords are the keywords plainResolves knows, with the shape
// jsonschema-go decodes each into. $id, anchors, $dynamicRef,
// $vocabulary, dependencies, additionalItems, $schema below the root and
// unknown keywords are not among them: jsonschema-go gives each rules of
// its own, and a schema with one is resolved by it.
var plainKeywords = map[string]int{
	"type": kwType,
	"$ref": kwString, "$comment": kwString, "title": kwString, "description": kwString, "format": kwString,
	"pattern": kwString, "contentEncoding": kwString, "contentMediaType": kwString,
	"$defs": kwMap, "definitions": kwMap, "properties": kwMap, "patternProperties": kwMap, "dependentSchemas": kwMap,
	"allOf": kwSchemas, "anyOf": kwSchemas, "oneOf": kwSchemas, "prefixItems": kwSchemas,
	"items": kwSchema, "additionalProperties": kwSchema, "not": kwSchema, "if": kwSchema, "then": kwSchema,
	"else": kwSchema, "contains": kwSchema, "propertyNames": kwSchema, "unevaluatedItems": kwSchema,
	"unevaluatedProperties": kwSchema, "contentSchema": kwSchema,
	"minLength": kwInt, "maxLength": kwInt, "minItems": kwInt, "maxItems": kwInt,
	"minContains": kwInt, "maxContains": kwInt, "minProperties": kwInt, "maxProperties": kwInt,
	"minimum": kwNumber, "maximum": kwNumber, "exclusiveMinimum": kwNumber, "exclusiveMaximum": kwNumber,
	"multipleOf": kwNumber,
	"deprecated": kwBool, "readOnly": kwBool, "writeOnly": kwBool, "uniqueItems": kwBool,
	"enum": kwArray, "examples": kwArray, "required": kwStrings, "const": kwAny, "default": kwAny,
	"dependentRequired": kwStringsMap,
}

// plainResolves reports whether jsonschema-go certainly decodes and
// resolves the schema whose bytes are raw and whose value, decoded by
// encoding/json, is doc, once index has accepted its references. It says
// yes only for a schema that uses only plainKeywords, each in the shape
// jsonschema-go decodes, integers within int32 and written without an
// exponent, never both $defs and definitions, $schema at the root only,
// and no object with a key twice (encoding/json keeps the last value;
// jsonschema-go's decode may fail on the first). With no $id and no anchor, every reference is a JSON Pointer from
// the root, which index has followed as jsonschema-go does. false means
// "not known": Check asks jsonschema-go (DESIGN.md, "Resolving without
// jsonschema-go"; TestPlainResolvesAgreesWithJSONSchemaGo).
func plainResolves(raw []byte, doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok || hasExponent(raw) || rawKeys(raw) != keys(doc) {
		return false
	}
	if s, ok := m["$schema"]; ok {
		if _, ok := s.(string); !ok {
			return false
		}
		rest := make(map[string]any, len(m)-1)
		for k, v := range m {
			if k != "$schema" {
				rest[k] = v
			}
		}
		m = rest
	}
	return plainSchema(m)
}

// plainSchema is plainResolves for a subschema.
func plainSchema(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		_, ok := v.(bool)
		return ok
	}
	if _, defs := m["$defs"]; defs {
		if _, both := m["definitions"]; both {
			return false
		}
	}
	for k, v := range m {
		kind, ok := plainKeywords[k]
		if !ok || !plainValue(kind, v) {
			return false
		}
	}
	return true
}

// plainValue reports whether v has the shape kind names.
func plainValue(kind int, v any) bool {
	switch kind {
	case kwSchema:
		return plainSchema(v)
	case kwSchemas:
		a, ok := v.([]any)
		for _, c := range a {
			if !plainSchema(c) {
				return false
			}
		}
		return ok && len(a) > 0
	case kwMap:
		return eachValue(v, plainSchema)
	case kwInt:
		f, ok := v.(float64)
		return ok && f >= 0 && f <= math.MaxInt32 && f == math.Trunc(f)
	case kwString:
		_, ok := v.(string)
		return ok
	case kwNumber:
		_, ok := v.(float64)
		return ok
	case kwBool:
		_, ok := v.(bool)
		return ok
	case kwArray:
		_, ok := v.([]any)
		return ok
	case kwStrings:
		return allStrings(v)
	case kwStringsMap:
		return eachValue(v, allStrings)
	case kwType:
		_, ok := v.(string)
		return ok || allStrings(v)
	}
	return kind == kwAny
}

// allStrings reports whether v is an array of strings.
func allStrings(v any) bool {
	a, ok := v.([]any)
	for _, e := range a {
		if _, s := e.(string); !s {
			return false
		}
	}
	return ok
}

// hasExponent reports whether raw may hold a number written with an
// exponent ("1e2"), which jsonschema-go does not decode as an integer. A
// digit followed by e or E and a sign or digit inside a string counts too:
// such a schema is only resolved by jsonschema-go.
func hasExponent(raw []byte) bool {
	for i := 1; i+1 < len(raw); i++ {
		if c := raw[i]; (c == 'e' || c == 'E') && raw[i-1] >= '0' && raw[i-1] <= '9' {
			if n := raw[i+1]; n == '+' || n == '-' || (n >= '0' && n <= '9') {
				return true
			}
		}
	}
	return false
}

// rawKeys counts the object keys written in raw, valid JSON: the strings
// followed by a colon.
func rawKeys(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				i++
			}
		}
		j := i + 1
		for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
			j++
		}
		if j < len(raw) && raw[j] == ':' {
			n++
		}
	}
	return n
}

// keys counts the members of every object in v, a value decoded by
// encoding/json: fewer than rawKeys when some object repeats a key.
func keys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n = len(v)
		for _, e := range v {
			n += keys(e)
		}
	case []any:
		for _, e := range v {
			n += keys(e)
		}
	}
	return n
}
