package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The reference implementations below decode with encoding/json; the
// readers must agree with them on every input.

func refMessage(payload []byte) (rpcMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return rpcMessage{}, false
	}
	var out rpcMessage
	if v, ok := m["id"]; ok {
		out.id = v
	}
	if v, ok := m["result"]; ok {
		out.result = v
	}
	if v, ok := m["error"]; ok {
		out.error = v
	}
	return out, true
}

func refEntries(raw []byte) ([]json.RawMessage, bool) {
	var result map[string]json.RawMessage
	if json.Unmarshal(raw, &result) != nil {
		return nil, false
	}
	var entries []json.RawMessage
	if json.Unmarshal(result["tools"], &entries) != nil || entries == nil {
		return nil, false
	}
	return entries, true
}

func refName(entry []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(entry, &m) != nil {
		return ""
	}
	var name string
	_ = json.Unmarshal(m["name"], &name)
	return name
}

var scanSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},null]}}`,
	`{"id":"x","error":{"code":-32600,"message":"no"}}`,
	`{"id":null,"error":{}}`,
	`{"method":"notifications/message","params":{}}`,
	` { "id" : 1 , "result" : null } `,
	`{"result":1,"result":{"tools":[]},"id":2,"id":"2"}`,
	`{"res\u0075lt":{"tool\u0073":[{"n\u0061me":"esc\u0041ped"}]},"id":1}`,
	`{"result":{"tools":[{"name":"a","name":"b"},{"name":5},{"name":null},{"Name":"c"},{},"str",7,[1],{"name":"\u00e9t\u00e9"},{"name":"caf\u00e9\n"}]}}`,
	"{\"result\":{\"tools\":[{\"name\":\"bad\xffutf8\"}]}}",
	`{"result":{"tools":null}}`,
	`{"result":{"tools":{}}}`,
	`{"result":{"Tools":[{"name":"a"}]}}`,
	`{"result":[]}`,
	`null`,
	` null `,
	`[]`,
	`"str"`,
	`1`,
	`{}`,
	`{"a":[{"b":"]}\"["},"}"],"result":{"tools":[{"name":"x\"y","d":"{[\\"}]}}`,
	`{"id":1e3,"result":{}}`,
	`{`,
	``,
	`{"id":1,"result":{"tools":[1,]}}`,
}

func FuzzReadMessage(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, gotOK := readMessage(payload)
		want, wantOK := refMessage(payload)
		if gotOK != wantOK {
			t.Fatalf("readMessage(%q) ok = %v, want %v", payload, gotOK, wantOK)
		}
		for _, c := range []struct {
			name      string
			got, want []byte
		}{{"id", got.id, want.id}, {"result", got.result, want.result}, {"error", got.error, want.error}} {
			if (c.got == nil) != (c.want == nil) || !bytes.Equal(c.got, c.want) {
				t.Errorf("readMessage(%q).%s = %q, want %q", payload, c.name, c.got, c.want)
			}
		}
	})
}

func FuzzRawEntries(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m, ok := readMessage(payload)
		if !ok || m.result == nil {
			return
		}
		got, gotOK := rawEntries(m.result)
		want, wantOK := refEntries(m.result)
		if gotOK != wantOK || !cmp.Equal(got, want, cmp.Comparer(bytes.Equal)) {
			t.Fatalf("rawEntries(%q) = %q, %v; want %q, %v", m.result, got, gotOK, want, wantOK)
		}
		for _, e := range got {
			if g, w := rawName(e), refName(e); g != w {
				t.Errorf("rawName(%q) = %q, want %q", e, g, w)
			}
		}
	})
}

func TestScannersOnSeeds(t *testing.T) {
	// The seeds exercise escapes, duplicates, case, nesting and broken input;
	// the fuzz targets run them with every go test.
	m, ok := readMessage([]byte(scanSeeds[7]))
	if !ok {
		t.Fatal("seed 7 did not read")
	}
	entries, ok := rawEntries(m.result)
	if !ok || len(entries) != 10 {
		t.Fatalf("rawEntries = %q, %v; want 10 entries", entries, ok)
	}
	var names []string
	for _, e := range entries {
		names = append(names, rawName(e))
	}
	want := []string{"b", "", "", "", "", "", "", "", "été", "café\n"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

var plainValues = []struct {
	name string
	v    any
}{
	{"nil", nil},
	{"bools", []any{true, false}},
	{"html and controls", "<a href=\"x\">&amp;</a>\\ \b\f\n\r\t\x00\x1f\x7f"},
	{"line separators", "a\u2028b\u2029c"},
	{"invalid utf-8", "ok\xffthen\xc3(\xe2\x82"},
	{"multibyte", "été ☃ 𝄞"},
	{"integers", []any{0.0, 1.0, -1.0, 42.0, 1e20, 123456789012345678.0}},
	{"fractions", []any{0.5, -0.25, 1.0 / 3, 1e-6, 0.000001}},
	{"exponents", []any{1e21, 1e-7, -1e-7, 5e-324, math.MaxFloat64, 1.5e300, 1e-10}},
	{"negative zero", math.Copysign(0, -1)},
	{"nil slice", []any(nil)},
	{"nil map", map[string]any(nil)},
	{"empty", []any{map[string]any{}, []any{}, ""}},
	{"sorted keys", map[string]any{"b": 1.0, "a": map[string]any{"z": nil, "é": 2.0, "Z": "x", "<": true, "": 0.0}}},
	{"map past the stack-sorted size", func() map[string]any {
		m := map[string]any{}
		for i := range 40 {
			m[fmt.Sprintf("k%02d", 39-i)] = map[string]any{"v": float64(i), "s": []any{"x", nil}}
		}
		return m
	}()},
	{"realistic schema", map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"query": map[string]any{"type": "string", "description": "What to look for <in> the index & more"}, "limit": map[string]any{"type": "integer", "minimum": 1.0, "maximum": 100.0, "default": 10.0}},
		"required":             []any{"query"},
		"additionalProperties": false,
	}},
}

// marshalAsTheValidator returns what remarshalSchema returns for schema as
// the input schema of a tool that holds nothing else, and what json.Marshal
// returns for the same.
func marshalAsTheValidator(v *validator, schema any) (got, want []byte, gotErr, wantErr error) {
	tool := &sdk.Tool{Name: "t", InputSchema: schema}
	got, gotErr = v.remarshalSchema(tool, schema)
	if _, wantErr = json.Marshal(tool); wantErr == nil {
		want, wantErr = json.Marshal(schema)
	}
	return got, want, gotErr, wantErr
}

func TestRemarshalSchemaWritesWhatMarshalWrites(t *testing.T) {
	v := newValidator() // reused across cases, as across a listing
	for _, tc := range plainValues {
		t.Run(tc.name, func(t *testing.T) {
			got, want, gotErr, wantErr := marshalAsTheValidator(v, tc.v)
			if wantErr != nil {
				t.Fatal(wantErr)
			}
			if gotErr != nil || string(got) != string(want) {
				t.Errorf("remarshalSchema = %s, %v; want %s", got, gotErr, want)
			}
			if !plain(tc.v, 0) {
				t.Error("plain = false, want true")
			}
		})
	}
}

type customString string

func TestPlainRefusesWhatItCannotVouchFor(t *testing.T) {
	deep := any("leaf")
	for range maxPlainDepth + 1 {
		deep = []any{deep}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for _, tc := range []struct {
		name        string
		v           any
		marshalFail bool
	}{
		{"NaN", math.NaN(), true},
		{"+Inf in a map", map[string]any{"x": math.Inf(1)}, true},
		{"-Inf in a slice", []any{1.0, math.Inf(-1)}, true},
		{"cycle", cyclic, true},
		{"too deep", deep, false},
		{"int", 1, false},
		{"json.Number", json.Number("1.50"), false},
		{"raw message", json.RawMessage(`{"type":"object"}`), false},
		{"named string", customString("object"), false},
		{"typed map", map[string]string{"type": "object"}, false},
		{"channel", make(chan int), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if plain(tc.v, 0) {
				t.Error("plain = true, want false")
			}
			got, want, gotErr, wantErr := marshalAsTheValidator(newValidator(), tc.v)
			if (wantErr != nil) != tc.marshalFail {
				t.Errorf("json.Marshal error = %v, want failure %v", wantErr, tc.marshalFail)
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || string(got) != string(want) {
				t.Errorf("remarshalSchema = %s, %v; want %s, %v", got, gotErr, want, wantErr)
			}
		})
	}
}

// FuzzRemarshalSchema: a schema decoded by encoding/json (a stand-in's, in
// the validator) or by segmentio (the SDK's) is written as json.Marshal
// writes it.
func FuzzRemarshalSchema(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"number","default":1e-7,"enum":[1e21,0.1,-0]}}}`))
	f.Add([]byte(`{"d":"<a href=\"x\">&amp;</a>\u2028\u2029\ud800 \u0000\u007f","b":[5e-324,1.7976931348623157e308,123456789012345678]}`))
	v := newValidator()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, unmarshal := range []func([]byte, any) error{json.Unmarshal, segjson.Unmarshal} {
			var schema any
			if unmarshal(data, &schema) != nil {
				continue
			}
			got, want, gotErr, wantErr := marshalAsTheValidator(v, schema)
			if wantErr != nil {
				t.Fatal(wantErr)
			}
			if gotErr != nil || string(got) != string(want) {
				t.Errorf("remarshalSchema(%s) = %s, %v; want %s", data, got, gotErr, want)
			}
		}
	})
}

// TestObjectSchemaMatchesRoundTrip: deciding on the decoded value gives
// the verdict of marshaling and decoding it again.
func TestObjectSchemaMatchesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema any
		want   bool
	}{
		{"object", map[string]any{"type": "object"}, true},
		{"string type", map[string]any{"type": "string"}, false},
		{"no type", map[string]any{"properties": map[string]any{}}, false},
		{"null type", map[string]any{"type": nil}, false},
		{"array type", map[string]any{"type": []any{"object"}}, false},
		{"nil map", map[string]any(nil), false},
		{"nil", nil, false},
		{"array", []any{map[string]any{"type": "object"}}, false},
		{"string", "object", false},
		{"named string type", map[string]any{"type": customString("object")}, true},
		{"raw message", json.RawMessage(`{"type":"object"}`), true},
		{"typed map", map[string]string{"type": "object"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marshaled, err := json.Marshal(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			roundTrip := json.Unmarshal(marshaled, &obj) == nil && obj != nil && obj["type"] == "object"
			if roundTrip != tc.want {
				t.Fatalf("round trip says %v; the case is wrong", roundTrip)
			}
			if got := objectSchema(tc.schema, marshaled); got != tc.want {
				t.Errorf("objectSchema = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRemarshalSchemaMatchesEncodingJSON(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	for _, tc := range []struct {
		name string
		tool *sdk.Tool
	}{
		{"plain", &sdk.Tool{Name: "a", InputSchema: schema, OutputSchema: schema, Meta: sdk.Meta{"k": []any{1.0}}}},
		{"raw schema", &sdk.Tool{Name: "b", InputSchema: json.RawMessage(`{"type": "object"}`)}},
		{"typed meta", &sdk.Tool{Name: "c", InputSchema: schema, Meta: sdk.Meta{"n": 3}}},
		{"NaN in output schema", &sdk.Tool{Name: "d", InputSchema: schema, OutputSchema: map[string]any{"x": math.NaN()}}},
		{"NaN in schema", &sdk.Tool{Name: "e", InputSchema: map[string]any{"x": math.NaN()}}},
		{"NaN in meta and schema", &sdk.Tool{Name: "f", InputSchema: map[string]any{"x": math.Inf(-1)}, Meta: sdk.Meta{"x": math.NaN()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newValidator().remarshalSchema(tc.tool, tc.tool.InputSchema)
			_, wantErr := json.Marshal(tc.tool)
			if wantErr != nil {
				if err == nil || err.Error() != wantErr.Error() {
					t.Errorf("remarshalSchema error = %v, want %v", err, wantErr)
				}
				return
			}
			want, _ := json.Marshal(tc.tool.InputSchema)
			if err != nil || string(got) != string(want) {
				t.Errorf("remarshalSchema = %s, %v; want %s", got, err, want)
			}
		})
	}
}

// TestToolFieldsThatCanFailToMarshal pins what remarshalSchema relies on:
// of go-sdk's Tool, only Meta, InputSchema and OutputSchema hold values
// whose marshaling can fail; every other field is made of strings, bools,
// slices of them, and ToolAnnotations, whose MarshalJSON marshals the same
// fields without the method.
func TestToolFieldsThatCanFailToMarshal(t *testing.T) {
	describe := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			out = append(out, f.Name+" "+f.Type.String()+" "+string(f.Tag.Get("json")))
		}
		return out
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[sdk.Tool](), []string{
			"Meta mcp.Meta _meta,omitempty",
			"Annotations *mcp.ToolAnnotations annotations,omitempty",
			"Description string description,omitempty",
			"InputSchema interface {} inputSchema",
			"Name string name",
			"OutputSchema interface {} outputSchema,omitempty",
			"Title string title,omitempty",
			"Icons []mcp.Icon icons,omitempty",
		}},
		{reflect.TypeFor[sdk.ToolAnnotations](), []string{
			"DestructiveHint *bool destructiveHint,omitempty",
			"IdempotentHint bool idempotentHint",
			"OpenWorldHint *bool openWorldHint,omitempty",
			"ReadOnlyHint bool readOnlyHint",
			"Title string title,omitempty",
		}},
		{reflect.TypeFor[sdk.Icon](), []string{
			"Source string src",
			"MIMEType string mimeType,omitempty",
			"Sizes []string sizes,omitempty",
			"Theme mcp.IconTheme theme,omitempty",
		}},
	} {
		if diff := cmp.Diff(tc.want, describe(tc.typ)); diff != "" {
			t.Errorf("fields of %v (-want +got):\n%s", tc.typ, diff)
		}
	}
	if reflect.TypeFor[sdk.IconTheme]().Kind() != reflect.String {
		t.Error("IconTheme is no longer a string")
	}
	marshaler := reflect.TypeFor[json.Marshaler]()
	for _, typ := range []reflect.Type{reflect.TypeFor[sdk.Tool](), reflect.TypeFor[sdk.Icon](), reflect.TypeFor[sdk.IconTheme](), reflect.TypeFor[sdk.Meta]()} {
		if typ.Implements(marshaler) || reflect.PointerTo(typ).Implements(marshaler) {
			t.Errorf("%v has a MarshalJSON method now", typ)
		}
	}
	yes := true
	if _, err := json.Marshal(&sdk.Tool{Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes, Title: "\xff<"}, Icons: []sdk.Icon{{Source: "\xff", Sizes: []string{"x"}}}}); err != nil {
		t.Errorf("a tool with annotations and icons does not marshal: %v", err)
	}
}

func TestValidToolNameMatchesTheRule(t *testing.T) {
	rule := regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`) // the MCP specification's
	names := []string{"", "a", "A_b-9", strings.Repeat("x", 64), strings.Repeat("x", 65),
		strings.Repeat("x", 128), strings.Repeat("x", 129), // just inside, just outside
		"bad name", "é", "a\xff", "a.b", ".", "..", "a.", "a/b", "a\n", "\x00", "-", "_", "a:b", "a,b"}
	for c := 0; c < 256; c++ {
		names = append(names, "a"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := validToolName(n), rule.MatchString(n); got != want {
			t.Errorf("validToolName(%q) = %v, want %v", n, got, want)
		}
	}
}

func TestReadUpTo(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 1000)
	for _, tc := range []struct {
		name  string
		r     io.Reader
		size  int64
		limit int64
		want  []byte
	}{
		{"announced size", bytes.NewReader(body), int64(len(body)), 1 << 20, body},
		{"unknown size", bytes.NewReader(body), -1, 1 << 20, body},
		{"zero means unknown", bytes.NewReader(body), 0, 1 << 20, body},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(body)), -1, 1 << 20, body},
		{"size understated", bytes.NewReader(body), 10, 1 << 20, body},
		{"cut at the limit", bytes.NewReader(body), -1, 999, body[:999]},
		{"cut at the limit with a size", bytes.NewReader(body), int64(len(body)), 5000, body[:5000]},
		{"empty", bytes.NewReader(nil), -1, 10, []byte{}},
		{"no budget left", bytes.NewReader(body), -1, 0, nil},
		{"negative budget", bytes.NewReader(body), -1, -5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readUpTo(tc.r, tc.size, tc.limit)
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("readUpTo = %d bytes, %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
	boom := errors.New("boom")
	got, err := readUpTo(io.MultiReader(bytes.NewReader(body[:10]), iotest.ErrReader(boom)), -1, 100)
	if !errors.Is(err, boom) || !bytes.Equal(got, body[:10]) {
		t.Errorf("readUpTo on a failing reader = %q, %v; want the first 10 bytes and the error", got, err)
	}
}

func TestReadUpToAllocatesOnceForAnAnnouncedSize(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 64<<10)
	r := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		if b, _ := readUpTo(r, int64(len(body)), 1<<20); len(b) != len(body) {
			t.Fatal("short read")
		}
	})
	if allocs > 1 {
		t.Errorf("readUpTo made %v allocations, want 1", allocs)
	}
}

func TestAcceptedSchemasDoNotShareBytes(t *testing.T) {
	v := newValidator()
	v.consider(&sdk.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}}, nil)
	v.consider(&sdk.Tool{Name: "b", InputSchema: map[string]any{"type": "object", "title": "b"}}, nil)
	if len(v.listing.Tools) != 2 {
		t.Fatalf("accepted %d tools, want 2", len(v.listing.Tools))
	}
	_ = append(v.listing.Tools[0].InputSchema, "garbage"...)
	if got := string(v.listing.Tools[1].InputSchema); got != `{"title":"b","type":"object"}` {
		t.Errorf("second schema = %s after appending to the first", got)
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`, `-12.5e+10`, `1e5x`, `+1`,
		`tru`, `true `, ` false`, `nul`, `nulll`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `[,]`, `{"a":1,}`,
		`"\u00e9"`, `"\u00g9"`, `"\x"`, `"\/"`, "\"a\tb\"", "\"\x7f\xff\"", `"unterminated`, `"\`, "\"\\u12\"",
		"\t\r\n 1 \n", `{"a":[{"b":{}}],"c":[]}`, `[[]]]`, `{}}`, "1\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func TestValidJSONNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
	}{
		{"at the limit", maxJSONDepth},
		{"past the limit", maxJSONDepth + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pair := range []string{"[]", `{"a":}`} {
				open, closing := pair[:len(pair)-1], pair[len(pair)-1:]
				b := []byte(strings.Repeat(open, tc.depth) + "1" + strings.Repeat(closing, tc.depth))
				if pair == "[]" {
					b = []byte(strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth))
				}
				want := tc.depth <= maxJSONDepth
				if got, std := validJSON(b), json.Valid(b); got != want || std != want {
					t.Errorf("%s nested %d deep: validJSON = %v, json.Valid = %v; want %v", pair, tc.depth, got, std, want)
				}
				if _, got := readMessage(b); pair == `{"a":}` && got != want {
					t.Errorf("%s nested %d deep: readMessage ok = %v, want %v", pair, tc.depth, got, want)
				}
			}
		})
	}
}

// refCall decodes as encoding/json does, which also matches a key that
// differs from "id" or "method" in case only; folded says the body has
// such a key, which readCall, like the SDK, does not match.
func refCall(body []byte) (id []byte, method string, ok, folded bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) == nil {
		for k := range keys {
			if k != "id" && k != "method" && (strings.EqualFold(k, "id") || strings.EqualFold(k, "method") || !isASCII(k)) {
				folded = true
			}
		}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil, "", false, folded
	}
	return m.ID, m.Method, true, folded
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// TestDeepSchemaIsJudgedPerTool: a schema nested past the SDK's limit
// (1000) but within maxJSONDepth reaches the SDK as a stand-in and is
// checked for its tool alone; past maxJSONDepth the page is not read here,
// the SDK is handed it whole, and the listing fails.
func TestDeepSchemaIsJudgedPerTool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		tools []string
	}{
		{"past the SDK's limit", 2000, []string{"ok", "deep"}},
		{"at the limit", maxJSONDepth - 5, []string{"ok", "deep"}}, // in the message, result, tools, entry and schema
		{"past the limit", maxJSONDepth - 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deep := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
			page := []byte(`{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"deep","inputSchema":{"type":"object","x":` + deep + `}}]}`)
			s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
				answerAs(w, false, id, page)
			}})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 10*time.Second)})
			l, err := c.ListTools(testCtx(t, 10*time.Second))
			var names []string
			for _, tool := range l.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff(tc.tools, names); diff != "" || len(l.Refused) != 0 {
				t.Errorf("listed tools (-want +got):\n%s\nrefused %v", diff, l.Refused)
			}
			if (err != nil) != (tc.tools == nil) || err != nil && !errors.Is(err, ErrProtocol) {
				t.Errorf("ListTools error = %v", err)
			}
		})
	}
}

// TestSegmentioHasNoNestingLimit pins why parse measures the depth first:
// the SDK's JSON library parses any nesting, recursing once per level
// (go-sdk's internal/json checks a depth of its own before decoding).
func TestSegmentioHasNoNestingLimit(t *testing.T) {
	n := 3 * maxJSONDepth
	deep := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	if !segjson.Valid(deep) {
		t.Errorf("segmentio refuses %d levels; parse may no longer need its depth check", n)
	}
	if validJSON(deep) {
		t.Errorf("validJSON accepts %d levels", n)
	}
	hostile := []byte(`{"result":` + strings.Repeat("[", 8<<20) + `}`) // a budget's worth, never closed
	if _, ok := readMessage(hostile); ok {
		t.Error("readMessage accepts 8 Mi open brackets")
	}
}

func FuzzReadCall(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"method":"a","method":null}`,
		`{"method":"a","METHOD":"b"}`,
		`{"Method":"x","ID":7}`,
		`{"id":1,"id":2,"method":5}`,
		`{"m\u0065thod":"esc","id":null}`,
		`{"method":"caf\u00e9","id":"x"}`,
		"{\"meth\u212aod\":\"kelvin\"}",
		`{"ſd":1}`,
		`{"ıd":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, method, ok := readCall(body)
		wantID, wantMethod, wantOK, folded := refCall(body)
		if folded {
			return
		}
		if ok != wantOK || method != wantMethod || idKey(id) != idKey(wantID) {
			t.Errorf("readCall(%q) = %q, %q, %v; want %q, %q, %v", body, id, method, ok, wantID, wantMethod, wantOK)
		}
	})
}

// TestReadCallMatchesKeysExactly: a key that encoding/json would match
// case-insensitively is not "id" or "method" to readCall, as to the SDK.
func TestReadCallMatchesKeysExactly(t *testing.T) {
	for _, tc := range []struct {
		body       string
		id, method string
	}{
		{`{"Method":"x","ID":7}`, "", ""},
		{`{"METHOD":"x","id":7}`, "7", ""},
		{`{"ıd":7,"method":"x"}`, "", "x"}, // dotless i: encoding/json folds it to I
	} {
		id, method, ok := readCall([]byte(tc.body))
		if !ok || string(id) != tc.id || method != tc.method {
			t.Errorf("readCall(%s) = %q, %q, %v; want %q, %q, true", tc.body, id, method, ok, tc.id, tc.method)
		}
	}
}

// refIDKey is idKey without its fast path for integers.
func refIDKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s:" + s
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return "x:" + string(raw)
	}
	return "n:" + strconv.FormatInt(int64(f), 10)
}

func FuzzIDKey(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1", "007", "10", "123456789012345", "1234567890123456", "-123456789012345",
		"9007199254740993", "1.0", "1e2", "-", "", " 7 ", "null", `"7"`, "1.5", "0.0", "-00", "1a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := idKey(raw), refIDKey(raw); got != want {
			t.Errorf("idKey(%q) = %q, want %q", raw, got, want)
		}
	})
}

// validJSON (tests only) pins how the scanner's parts compose: it what encoding/json's json.Valid reports: b is one JSON
// value surrounded by whitespace at most, nested at most maxJSONDepth deep.
func validJSON(b []byte) bool {
	return shallow(b) && segjson.Valid(b)
}
