package catalog

import (
	"encoding/hex"
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

// TestContentHashOfOldCatalogs pins the hash of a listing without the
// optional fields to the one stored before tools had them, so such a
// catalog re-discovered is unchanged.
func TestContentHashOfOldCatalogs(t *testing.T) {
	p := prepare("id", Discovery{Listing: mcp.Listing{
		Tools: []mcp.Tool{
			{Name: "search", Description: "finds", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "get_user", InputSchema: json.RawMessage(`{}`)},
		},
		Refused: []mcp.Refusal{{Name: "bad", Reason: "why"}},
	}})
	if err := p.finish(prior{}); err != nil {
		t.Fatal(err)
	}
	if want := "7595abb34d09ba8327fdba70383a7aec1bb9215d805ec96d11662523f32fe85b"; p.hash != want {
		t.Errorf("hash %s, want %s as before", p.hash, want)
	}
	with := prepare("id", Discovery{Listing: mcp.Listing{Tools: []mcp.Tool{
		{Name: "search", Description: "finds", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.Annotations{}},
		{Name: "get_user", InputSchema: json.RawMessage(`{}`)},
	}, Refused: []mcp.Refusal{{Name: "bad", Reason: "why"}}}})
	if err := with.finish(prior{}); err != nil {
		t.Fatal(err)
	}
	if with.hash == p.hash {
		t.Error("empty annotations do not change the hash")
	}
}

// TestOldCompressedToolDecodes reads a compressed tool as stored before the
// optional fields: three framed fields.
func TestOldCompressedToolDecodes(t *testing.T) {
	z, _ := hex.DecodeString("1f8b08000000000002ff62ac624c61aaae05040000ffff5bca7df907000000")
	got, err := gunzipTool(z)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.Tool{Name: "z", Description: "d", InputSchema: json.RawMessage(`{}`)}, got); diff != "" {
		t.Errorf("old compressed tool (-want +got):\n%s", diff)
	}
}

func TestOptionalFieldsRoundTripCompressed(t *testing.T) {
	yes, no := true, false
	tools := []mcp.Tool{
		{Name: "a", Title: "T <&>", InputSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(`{"x":"<"}`),
			Annotations: &mcp.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no, Other: json.RawMessage(`{"title":"x"}`)},
			Meta:        json.RawMessage(`{"k":1}`)},
		{Name: "b", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{}},
		{Name: "c", InputSchema: json.RawMessage(`{}`), Meta: json.RawMessage(`{}`)},
	}
	for _, tool := range tools {
		got, err := gunzipTool(gzipTool(tool))
		if err != nil {
			t.Fatalf("gunzipTool: %v", err)
		}
		if diff := cmp.Diff(tool, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	for _, bad := range [][]byte{{0, 0, 0, 0}, {0, 0, 0, 0, 0, 2, 3, 0, 0}, {0, 0, 0, 0, 0, 4, 0, 0, 0, 9, 0}} {
		if _, err := decodeTool(bad); err == nil {
			t.Errorf("decodeTool(%v) accepted malformed input", bad)
		}
	}
}

func TestMappedDigits(t *testing.T) {
	for s, want := range map[string]string{
		"a_0123456789ab":                        "0123456789ab",
		"_0123456789abc":                        "0123456789abc",
		"a_0123456789a":                         "", // 11 digits
		"a_0123456789AB":                        "", // upper case
		"a.b_0123456789ab":                      "", // not model-safe
		"0123456789ab":                          "", // no separator
		"x_" + strings.Repeat("0", 63):          "", // 65 bytes
		"_" + strings.Repeat("f", 63):           strings.Repeat("f", 63),
		mappedName("files.read", 12):            mappedName("files.read", 12)[len("files_read_"):],
		mappedName(strings.Repeat("é", 80), 20): mappedName(strings.Repeat("é", 80), 20)[44:],
	} {
		if got := mappedDigits(s); got != want {
			t.Errorf("mappedDigits(%q) = %q, want %q", s, got, want)
		}
	}
	if m := mappedName(strings.Repeat("é", 80), 20); len(m) != 64 || !validModelName(m) {
		t.Errorf("mappedName of 80 é = %q", m)
	}
}
