package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
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

// FuzzDecodeSchema: the validator decodes a stand-in schema with decode
// (segmentio, as the SDK decodes one), falling back to encoding/json for
// its error. Both accept the same values and build the same ones.
func FuzzDecodeSchema(f *testing.F) {
	for _, in := range []string{`"\ud800"`, `"\udc00x"`, `"\ud83d\ude00"`, "\"\xff\xfe\"", `1e400`, `-0`,
		`12345678901234567890`, `"\u0000"`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]},"A":3}`,
		`[1.5e-7,true,false,null]`, "\"\xed\xa0\x80\"", `0.1e1`, `"<&>\u2028"`, `{"":1}`, `{"type":"object"}`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !shallow(in) {
			return
		}
		var std, seg any
		err := json.Unmarshal(in, &std)
		if ok := decode(in, &seg); ok != (err == nil) {
			t.Fatalf("%q: decode %v, json.Unmarshal %v", in, ok, err)
		}
		if diff := cmp.Diff(std, seg); err == nil && diff != "" {
			t.Fatalf("%q: (-json.Unmarshal +decode):\n%s", in, diff)
		}
	})
}
