package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	segjson "github.com/segmentio/encoding/json"
)

// canonCases hold what canon must write as json.Marshal writes the
// decoded value, and what it must leave to the decoders.
var canonCases = []struct {
	raw      string
	declines bool // invalid UTF-8, a repeated key, a number no float64 holds
}{
	{raw: `{"type":"object"}`},
	{raw: `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer","minimum":-0}}}`},
	{raw: ` { "z" : [ 1 , 2.50 , 1e3 , 1E-7 , -0.0 , 123456789012345678 , 1e21 , 0.000001 , 5e-324 ] , "a" : null } `},
	{raw: `{"b":1,"a":{"d":true,"c":false,"e":{"y":[],"x":{}}},"c":"x"}`},
	{raw: `{"d":"<a href=\"x\">&amp;</a>\u2028\u2029 \u0000\u007f\b\f\n\r\t\/"}`},
	{raw: "{\"s\":\"literal \u2028 and \u2029 and \u00e9 and \U0001F600\"}"},
	{raw: `{"\u0062":1,"a":2,"é":3,"e\u0301":4,"😀":5,"ｚ":6}`},
	{raw: `{"type":"\u006fbject"}`},
	{raw: `{"type":["object"]}`},
	{raw: `{"properties":{"type":"object"}}`},
	{raw: `[{"type":"object"}]`},
	{raw: `"object"`},
	{raw: `null`},
	{raw: `17`},
	{raw: `{"n":1.7976931348623157e308,"m":-9007199254740993,"k":100000000000000000000000}`},
	{raw: `{"a":1,"a":2}`, declines: true},
	{raw: `{"a":{"b":1,"b":1}}`, declines: true},
	{raw: "{\"a\":\"\xff\"}", declines: true},
	{raw: `{"a":1e400}`, declines: true},
	{raw: `{"a":"\ud800"}`, declines: true},
	{raw: strings.Repeat(`[`, maxPlainDepth+2) + strings.Repeat(`]`, maxPlainDepth+2), declines: true},
	{raw: `{"a":1} {"b":2}`, declines: true},
	{raw: `{"a":1,}`, declines: true},
}

// marshalDecoded is what the validator wrote before canon: the value
// decoded, by segmentio (the readers') or encoding/json, then marshaled.
func marshalDecoded(t testing.TB, raw []byte, unmarshal func([]byte, any) error) ([]byte, bool) {
	t.Helper()
	var v any
	if unmarshal(raw, &v) != nil {
		return nil, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal of a decoded value: %v", err)
	}
	return out, true
}

func TestCanonWritesWhatMarshalWrites(t *testing.T) {
	var c canon // reused across cases, as across a listing
	for _, tc := range canonCases {
		got, object, ok := c.appendCanonical([]byte("prefix"), []byte(tc.raw))
		if ok == tc.declines {
			t.Errorf("appendCanonical(%.60s) ok = %v, want %v", tc.raw, ok, !tc.declines)
			continue
		}
		if !ok {
			if string(got) != "prefix" {
				t.Errorf("appendCanonical(%.60s) declined but wrote %q", tc.raw, got)
			}
			continue
		}
		got = bytes.TrimPrefix(got, []byte("prefix"))
		want, decodes := marshalDecoded(t, []byte(tc.raw), json.Unmarshal)
		if !decodes {
			t.Errorf("appendCanonical(%.60s) read what encoding/json refuses", tc.raw)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendCanonical(%s) = %s, want %s", tc.raw, got, want)
		}
		var decoded any
		_ = json.Unmarshal([]byte(tc.raw), &decoded)
		if wantObject := objectSchema(decoded, want); object != wantObject {
			t.Errorf("appendCanonical(%s) object = %v, want %v", tc.raw, object, wantObject)
		}
	}
}

// TestCanonReadsTheCatalogsSchemas: every schema mcptest lists, the
// realistic filler's included, indented, is written as the decoders' path
// writes it.
func TestCanonReadsTheCatalogsSchemas(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true, ExtraTools: 400})
	res, err := sdkSession(t, s.URL, nil).ListTools(testCtx(t, 30*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	var c canon
	n := 0
	for _, tool := range res.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		got, object, ok := c.appendCanonical(nil, indented.Bytes())
		want, _ := marshalDecoded(t, indented.Bytes(), segjson.Unmarshal)
		if !ok || !object || !bytes.Equal(got, want) {
			t.Fatalf("%s: appendCanonical = %s, %v, %v; want %s", tool.Name, got, object, ok, want)
		}
		n++
	}
	if n < 400 {
		t.Fatalf("checked %d schemas, want at least 400", n)
	}
}

// FuzzCanonical: whatever canon reads, it writes as json.Marshal writes
// the value segmentio and encoding/json decode it to, and its object
// verdict is objectSchema's.
func FuzzCanonical(f *testing.F) {
	for _, tc := range canonCases {
		f.Add([]byte(tc.raw))
	}
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	var c canon
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, object, ok := c.appendCanonical(nil, raw)
		if !ok {
			return
		}
		for _, unmarshal := range []func([]byte, any) error{segjson.Unmarshal, json.Unmarshal} {
			want, decodes := marshalDecoded(t, raw, unmarshal)
			if !decodes {
				t.Fatalf("appendCanonical(%q) read what a decoder refuses", raw)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appendCanonical(%q) = %s, want %s", raw, got, want)
			}
		}
		var decoded any
		_ = json.Unmarshal(raw, &decoded)
		if want := objectSchema(decoded, got); object != want {
			t.Fatalf("appendCanonical(%q) object = %v, want %v", raw, object, want)
		}
	})
}
