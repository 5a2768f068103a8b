package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

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
