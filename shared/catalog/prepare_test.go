package catalog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

func TestToolEncodingRoundTrips(t *testing.T) {
	tools := []mcp.Tool{
		{Name: "a", Description: "d", InputSchema: json.RawMessage("{ \"x\": \"<&>\" }\n")},
		{Name: "", Description: "", InputSchema: nil},
		{Name: "\xff\xfe", Description: strings.Repeat("é", 1000), InputSchema: json.RawMessage(`{}`)},
	}
	for _, tool := range tools {
		got, err := gunzipTool(gzipTool(tool))
		if err != nil {
			t.Fatalf("gunzipTool: %v", err)
		}
		if got.Name != tool.Name || got.Description != tool.Description || string(got.InputSchema) != string(tool.InputSchema) {
			t.Errorf("round trip of %q gave %q", tool.Name, got.Name)
		}
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, append(encodeTool(tools[0]), 0)} {
		if _, err := decodeTool(bad); err == nil {
			t.Errorf("decodeTool(%q) accepted malformed input", bad)
		}
	}
}

func TestPrepareStoresInvalidUTF8Compressed(t *testing.T) {
	p := prepare("id", Discovery{Listing: mcp.Listing{Tools: []mcp.Tool{
		{Name: "ok", InputSchema: json.RawMessage(`{}`)},
		{Name: "bad\xff", InputSchema: json.RawMessage(`{}`)},
	}}})
	if p.entries[0].zipped != nil || p.entries[1].zipped == nil {
		t.Errorf("zipped: ok %t, bad %t; want only the invalid UTF-8 name compressed", p.entries[0].zipped != nil, p.entries[1].zipped != nil)
	}
}

func TestKeysSortByStart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []time.Time{
		t0,
		t0.Add(time.Nanosecond),
		t0.Add(time.Second).In(time.FixedZone("x", -5*3600)), // zone must not matter
		t0.Add(time.Hour),
		t0.AddDate(1, 0, 0),
	}
	prev := ""
	for _, at := range steps {
		k := newKey(at)
		if len(k) != len(newKey(t0)) {
			t.Errorf("key %q is not fixed-width", k)
		}
		if k <= prev {
			t.Errorf("key %q for %s does not sort after %q", k, at, prev)
		}
		prev = k
	}
}

func TestContentHash(t *testing.T) {
	tool := func(name, desc string) entry {
		return entry{tool: mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{}`)}}
	}
	base := contentHash([]entry{tool("ab", "c")}, nil)
	others := map[string]string{
		"field boundary moved": contentHash([]entry{tool("a", "bc")}, nil),
		"tool became refusal":  contentHash(nil, []mcp.Refusal{{Name: "ab", Reason: "c"}}),
		"refusal added":        contentHash([]entry{tool("ab", "c")}, []mcp.Refusal{{Name: "x"}}),
		"order":                contentHash([]entry{tool("ab", "c"), tool("x", "")}, nil),
	}
	for name, h := range others {
		if h == base {
			t.Errorf("%s: same hash", name)
		}
	}
	if again := contentHash([]entry{tool("ab", "c")}, nil); again != base {
		t.Errorf("hash not deterministic: %s then %s", base, again)
	}
}

func TestNameIndex(t *testing.T) {
	var entries []entry
	for _, n := range []string{"b", "a", "c", "", "ü"} {
		entries = append(entries, entry{tool: mcp.Tool{Name: n}, hash: [32]byte(sha256Of(n))})
	}
	ix := nameIndex(entries)
	got := map[string]bool{}
	for _, n := range []string{"a", "b", "c", "", "ü", "d", "A", "u"} {
		got[n] = indexContains(ix, n)
	}
	want := map[string]bool{"a": true, "b": true, "c": true, "": true, "ü": true, "d": false, "A": false, "u": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("membership (-want +got):\n%s", diff)
	}
	if indexContains(nil, "a") {
		t.Error("empty index contains a name")
	}
}
