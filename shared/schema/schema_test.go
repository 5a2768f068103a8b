package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// nest returns an object schema that nests JSON objects levels deep.
func nest(levels int) string {
	s := `{"type":"object"}`
	n := levels - 1
	if n%2 == 1 {
		s = `{"type":"object","additionalProperties":` + s + `}` // one level
		n--
	}
	for ; n > 0; n -= 2 {
		s = `{"type":"object","properties":{"a":` + s + `}}` // two levels
	}
	return s
}

var accepted = []struct{ name, schema string }{
	{"minimal", `{"type":"object"}`},
	{"filler", `{"type":"object","properties":{"id":{"type":"string","description":"The invoice id."},"fields":{"type":"array","items":{"type":"string"}},"include_archived":{"type":"boolean","default":false}},"required":["id"]}`},
	{"defs ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`},
	{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`},
	{"recursive through properties", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`},
	{"root recursion through properties", `{"type":"object","properties":{"next":{"$ref":"#"}}}`},
	{"ref chain that ends", `{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"string"}}}`},
	{"anchor", `{"type":"object","properties":{"a":{"$ref":"#s"}},"$defs":{"s":{"$anchor":"s","type":"string"}}}`},
	{"escaped pointer", `{"type":"object","properties":{"a/b~c":{"type":"string"},"x":{"$ref":"#/properties/a~1b~0c"}}}`},
	{"percent-encoded pointer", `{"type":"object","properties":{"a b":{"type":"string"},"x":{"$ref":"#/properties/a%20b"}}}`},
	{"ref inside an $id resource", `{"$id":"https://example.com/root","type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`},
	{"pointer from a nested $id", `{"type":"object","$defs":{"r":{"$id":"https://example.com/r","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}},"allOf":[{"$ref":"#/$defs/r"}]}`},
	{"dynamic ref", `{"type":"object","$dynamicAnchor":"node","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}`},
	{"exactly MaxDepth", nest(MaxDepth)},
	{"$schema and $id on a host are only names", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"http://127.0.0.1:1/x","type":"object"}`},
	{"boolean subschemas", `{"type":"object","properties":{"a":true,"b":{"$ref":"#/properties/a"}},"additionalProperties":false}`},
}

func TestCheckAccepts(t *testing.T) {
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check([]byte(tt.schema)); err != nil {
				t.Errorf("Check(%s) = %v, want nil", tt.schema, err)
			}
		})
	}
}

// TestAcceptedSchemasResolve pins that what Check accepts, jsonschema-go
// compiles, also where Check does not ask it to (schemas with no $ref).
func TestAcceptedSchemasResolve(t *testing.T) {
	schemas := catalog()
	for _, tt := range accepted {
		schemas = append(schemas, []byte(tt.schema))
	}
	for _, schema := range schemas {
		var s jsonschema.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Errorf("unmarshal %s: %v", schema, err)
			continue
		}
		s.Schema = draft202012
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("Resolve(%s) = %v", schema, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	big := `{"type":"object","description":"` + strings.Repeat("x", MaxBytes) + `"}`
	tests := []struct {
		name, schema string
		want         string // the error's text after "schema refused: "
	}{
		{"over MaxBytes", big, "size: 262178 bytes, over the 262144 allowed"},
		{"one level too deep", nest(MaxDepth + 1), "depth: nested 101 levels, over the 100 allowed"},
		{"past encoding/json's limit", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), "depth: nested more than 100 levels"},
		{"not JSON", `{"type":"object"`, "json: unexpected end of JSON input"},
		{"array root", `[{"type":"object"}]`, `root: not a JSON object with "type": "object"`},
		{"boolean root", `true`, `root: not a JSON object with "type": "object"`},
		{"no type", `{"properties":{}}`, `root: not a JSON object with "type": "object"`},
		{"string type", `{"type":"string"}`, `root: not a JSON object with "type": "object"`},
		{"type list", `{"type":["object","null"]}`, `root: not a JSON object with "type": "object"`},
		{"remote http ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `remote-ref: "https://example.com/s.json" at #/properties/a is not a fragment ("#…"); it is not fetched`},
		{"remote urn ref", `{"type":"object","properties":{"a":{"$ref":"urn:example:s"}}}`, `remote-ref: "urn:example:s" at #/properties/a is not a fragment ("#…"); it is not fetched`},
		{"relative ref", `{"type":"object","allOf":[{"$ref":"other.json#/x"}]}`, `remote-ref: "other.json#/x" at #/allOf/0 is not a fragment ("#…"); it is not fetched`},
		{"remote dynamic ref", `{"type":"object","$dynamicRef":"https://example.com/s#meta"}`, `remote-ref: "https://example.com/s#meta" at # is not a fragment ("#…"); it is not fetched`},
		{"dangling pointer", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, `dangling-ref: "#/$defs/missing" at #/properties/a refers to no schema`},
		{"pointer to a non-schema", `{"type":"object","required":["a"],"properties":{"a":{"$ref":"#/required/0"}}}`, `dangling-ref: "#/required/0" at #/properties/a refers to no schema`},
		{"dangling anchor", `{"type":"object","properties":{"a":{"$ref":"#nowhere"}}}`, `dangling-ref: "#nowhere" at #/properties/a refers to no schema`},
		{"cycle a b a", `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, `cyclic-ref: the schema at #/$defs/a reaches itself through $ref without descending into a property or item`},
		{"ref to itself", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}}}`, `cyclic-ref: the schema at #/$defs/a reaches itself through $ref without descending into a property or item`},
		{"root refers to root", `{"type":"object","$ref":"#"}`, `cyclic-ref: the schema at # reaches itself through $ref without descending into a property or item`},
		{"cycle through allOf", `{"type":"object","allOf":[{"$ref":"#"}]}`, `cyclic-ref: the schema at # reaches itself through $ref without descending into a property or item`},
		{"unknown type name", `{"type":"object","properties":{"a":{"type":"strng"}}}`, "compile: not a draft 2020-12 schema: anyOf: did not validate against any of [<anonymous schema> <anonymous schema>]: enum: strng does not equal any of: [array boolean integer null number object string]"},
		{"required repeats a name", `{"type":"object","required":["a","a"]}`, "compile: not a draft 2020-12 schema: uniqueItems:"},
		{"required not a list", `{"type":"object","required":"a"}`, `compile: not a draft 2020-12 schema: type: a has type "string", want "array"`},
		{"draft-07 tuple items", `{"type":"object","properties":{"a":{"items":[{"type":"string"}]}}}`, "compile: not a draft 2020-12 schema: type: [map[type:string]] has type \"array\", want one of \"object, boolean\""},
		{"minimum not a number", `{"type":"object","properties":{"a":{"minimum":"1"}}}`, `compile: not a draft 2020-12 schema: type: 1 has type "string", want "number"`},
		{"pattern does not compile", `{"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}}`, "compile: pattern at #/properties/a: error parsing regexp: missing closing ): `(unclosed`"},
		// With a reference, jsonschema-go compiles the schema too.
		{"ref and jsonschema-go's both-defs rule", `{"type":"object","$defs":{"a":{}},"definitions":{"b":{}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "compile: both Defs and Definitions are set"},
		{"ref and an int past int32", `{"type":"object","$defs":{"a":{"maxLength":3000000000}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "compile: integer is out of range"},
		{"duplicate anchor", `{"type":"object","$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`, `compile: anchor "x" at #/$defs/b is declared before in the same resource`},
		{"same anchor in two resources", `{"type":"object","$defs":{"a":{"$anchor":"x"},"b":{"$id":"https://example.com/b","$anchor":"x"}}}`, ""},
		{"$id with a fragment", `{"type":"object","$defs":{"a":{"$id":"https://example.com/a#frag"}}}`, `compile: not a draft 2020-12 schema: pattern: "https://example.com/a#frag" does not match`},
		{"duplicate $id", `{"type":"object","$defs":{"a":{"$id":"https://example.com/a"},"b":{"$id":"https://example.com/a"}}}`, `compile: $id "https://example.com/a" at #/$defs/b names a schema named before`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.schema))
			if tt.want == "" {
				if err != nil {
					t.Errorf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Check = %v, want an error wrapping ErrRefused", err)
			}
			got := strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ")
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("Check refused with\n%s\nwant it to start with\n%s", got, tt.want)
			}
			if len(got) > len(tt.want) && len(got) > 40+maxDetail {
				t.Errorf("refusal is %d bytes, want at most about %d", len(got), maxDetail)
			}
		})
	}
}

// TestDanglingAgreesWithJSONSchemaGo pins that Check's own reference
// lookup is no stricter than jsonschema-go's: each reference Check calls
// dangling fails jsonschema-go's Resolve too.
func TestDanglingAgreesWithJSONSchemaGo(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		`{"type":"object","required":["a"],"properties":{"a":{"$ref":"#/required/0"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#nowhere"}}}`,
		`{"type":"object","allOf":[{"type":"string"}],"properties":{"a":{"$ref":"#/allOf/01"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/"}}}`,
		`{"$id":"https://example.com/r","type":"object","$defs":{"n":{"$id":"https://example.com/n","properties":{"a":{"$ref":"#/$defs/s"}}},"s":{"type":"string"}}}`,
	} {
		if err := Check([]byte(schema)); !strings.Contains(fmt.Sprint(err), ruleDangling) {
			t.Errorf("Check(%s) = %v, want %s", schema, err, ruleDangling)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(nil); err == nil {
			t.Errorf("jsonschema-go resolves %s, which Check calls dangling", schema)
		}
	}
}

// TestRemoteRefsAreNeverFetched points every keyword that holds a URI at
// a live server and asserts the server is never asked.
func TestRemoteRefsAreNeverFetched(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()
	u := srv.URL + "/s.json"
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"` + u + `"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"` + u + `#/x"}}}`,
		`{"type":"object","$dynamicRef":"` + u + `#meta"}`,
		`{"$id":"` + srv.URL + `/root","type":"object","properties":{"a":{"$ref":"s.json"}}}`,
		`{"$schema":"` + u + `","type":"object"}`,
		`{"$id":"` + u + `","type":"object"}`,
	} {
		_ = Check([]byte(schema))
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

// TestJSONSchemaGoLoadsNothingWithoutALoader pins what noLoad relies on
// only as a second line: Resolve with no Loader refuses a remote $ref
// without a request (resolve.go: "no loader passed to Schema.Resolve"),
// and neither $schema nor $id is ever fetched.
func TestJSONSchemaGoLoadsNothingWithoutALoader(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"type":"string"}`)
	}))
	defer srv.Close()
	u := srv.URL + "/s.json"
	resolve := func(schema string, opts *jsonschema.ResolveOptions) error {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		_, err := s.Resolve(opts)
		return err
	}
	err := resolve(`{"type":"object","properties":{"a":{"$ref":"`+u+`"}}}`, nil)
	if err == nil || !strings.Contains(err.Error(), "no loader passed to Schema.Resolve") {
		t.Errorf("Resolve(remote $ref, nil) = %v, want the no-loader error", err)
	}
	err = resolve(`{"type":"object","properties":{"a":{"$ref":"`+u+`"}}}`, &jsonschema.ResolveOptions{Loader: noLoad})
	if !errors.Is(err, errNoLoad) {
		t.Errorf("Resolve(remote $ref, noLoad) = %v, want errNoLoad", err)
	}
	if err := resolve(`{"$schema":"`+u+`","$id":"`+u+`","type":"object"}`, nil); err != nil {
		t.Errorf("Resolve($schema and $id on a server) = %v, want nil", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests, want 0", n)
	}
}

// TestJSONSchemaGoSkipsTheMetaSchema pins why Check validates against the
// meta-schema itself: jsonschema-go's Resolve accepts an unknown type name.
func TestJSONSchemaGoSkipsTheMetaSchema(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"a":{"type":"strng"}}}`), &s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(nil); err != nil {
		t.Errorf("Resolve = %v; if jsonschema-go now checks the meta-schema, Check's own check may go", err)
	}
}

// TestLookaheadPatternIsRefused pins a deviation Check inherits:
// jsonschema-go compiles "pattern" with Go's regexp (RE2), so an
// ECMA-262 lookahead, valid in draft 2020-12, does not compile.
// Check compiles patterns itself the same way, with and without a $ref.
func TestLookaheadPatternIsRefused(t *testing.T) {
	const email = `"e":{"type":"string","pattern":"^(?!\\.)[^@]+@[^@]+$"}`
	for _, schema := range []string{
		`{"type":"object","properties":{` + email + `}}`,
		`{"type":"object","properties":{` + email + `,"f":{"$ref":"#/properties/e"}}}`,
	} {
		err := Check([]byte(schema))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "compile: pattern at #/properties/e: error parsing regexp: invalid or unsupported Perl syntax: `(?!`") {
			t.Errorf("Check(%s) = %v, want a compile refusal of the pattern", schema, err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(nil); err == nil || !strings.Contains(err.Error(), "pattern: error parsing regexp") {
			t.Errorf("jsonschema-go's Resolve(%s) = %v, want a pattern error", schema, err)
		}
	}
}

func TestKeywordsNameEverySchemaField(t *testing.T) {
	got := map[string]bool{}
	for _, k := range keywords {
		got[k.name] = true
	}
	want := schemaFields()
	for name := range want {
		if !got[name] {
			t.Errorf("keywords lacks %q, a schema field of jsonschema.Schema", name)
		}
	}
	for name := range got {
		if !want[name] {
			t.Errorf("keywords has %q, which jsonschema.Schema does not read as a schema", name)
		}
	}
}

// schemaFields returns the JSON names of jsonschema.Schema's fields that
// hold schemas.
func schemaFields() map[string]bool {
	names := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		switch f.Type {
		case reflect.TypeFor[*jsonschema.Schema](), reflect.TypeFor[[]*jsonschema.Schema](), reflect.TypeFor[map[string]*jsonschema.Schema]():
		default:
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Name {
		case "Items", "ItemsArray":
			name = "items" // unmarshaled by hand from one key
		case "DependencySchemas":
			name = "dependencies"
		}
		names[name] = true
	}
	return names
}

// TestJSONSchemaGoAcceptsDuplicateAnchors pins why index refuses a second
// anchor of the same name itself: Resolve drops setAnchor's error.
func TestJSONSchemaGoAcceptsDuplicateAnchors(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`), &s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(nil); err != nil {
		t.Errorf("Resolve = %v; jsonschema-go now refuses duplicate anchors itself", err)
	}
}

// TestJSONSchemaGoLoopsOnCyclicRef pins why cyclic-ref is a rule:
// jsonschema-go's Validate follows $ref with no guard, so a cycle exhausts
// the stack, which no recover catches. The test runs that in a child
// process with a small stack.
func TestJSONSchemaGoLoopsOnCyclicRef(t *testing.T) {
	if os.Getenv("SCHEMA_CYCLE_CHILD") == "1" {
		debug.SetMaxStack(1 << 20)
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(`{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`), &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Validate(map[string]any{})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestJSONSchemaGoLoopsOnCyclicRef$")
	cmd.Env = append(os.Environ(), "SCHEMA_CYCLE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stack exceeds") {
		t.Errorf("child: %v, output starts\n%.300s\nwant a stack overflow; if jsonschema-go now stops cycles, say so in DESIGN.md", err, out)
	}
}

// TestNoNetworkingIsLinked pins that neither this package nor jsonschema-go
// imports a network client.
func TestNoNetworkingIsLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("listing the imports needs the go tool that runs these tests: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net" || pkg == "net/http" || strings.HasPrefix(pkg, "crypto/tls") {
			t.Errorf("shared/schema links %s", pkg)
		}
	}
}
