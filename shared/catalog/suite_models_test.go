package catalog_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// testFullEntries: title, output schema, annotations and meta round trip
// exactly, plain and compressed; each is part of the content hash.
func testFullEntries(t *testing.T, s catalogtest.Store) {
	zipped := catalogtest.FullTool("zipped", "z")
	zipped.Description = incompressible(450_000) // fits only compressed
	l := mcp.Listing{Tools: []mcp.Tool{
		catalogtest.FullTool("full", "a"),
		{Name: "bare-hints", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{}}, // present, all empty
		{Name: "open-world", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{OpenWorldHint: hint(true), IdempotentHint: hint(false)}},
		{Name: "titled", Title: "Only a title", InputSchema: json.RawMessage(`{}`)},
		catalogtest.Tool("plain", "a"),
		zipped,
	}}
	v := catalogtest.MustPut(t, s, "full", catalogtest.Discover(l, 0)).Version
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "full"), l)
	if res := catalogtest.MustPut(t, s, "full", catalogtest.Discover(l, time.Minute)); !res.Unchanged {
		t.Fatalf("same listing again = %+v, want unchanged", res)
	}
	changes := map[string]func(*mcp.Tool){
		"title":            func(t *mcp.Tool) { t.Title = "other" },
		"output schema":    func(t *mcp.Tool) { t.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"hint false→unset": func(t *mcp.Tool) { t.Annotations.DestructiveHint = nil },
		"hint false→true":  func(t *mcp.Tool) { t.Annotations.DestructiveHint = hint(true) },
		"other keys":       func(t *mcp.Tool) { t.Annotations.Other = nil },
		"meta":             func(t *mcp.Tool) { t.Meta = json.RawMessage(`{}`) },
		"annotations gone": func(t *mcp.Tool) { t.Annotations = nil },
	}
	for i, what := range slices.Sorted(maps.Keys(changes)) {
		c := slices.Clone(l.Tools)
		c[0] = catalogtest.FullTool("full", "a")
		changes[what](&c[0])
		changed := mcp.Listing{Tools: c}
		res := catalogtest.MustPut(t, s, "full", catalogtest.Discover(changed, time.Duration(i+2)*time.Minute))
		if res.Unchanged || res.Version == v {
			t.Errorf("%s changed: Put = %+v, want a new version", what, res)
		}
		v = res.Version
		catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "full"), changed)
	}
	catalogtest.MustPut(t, s, "full", catalogtest.Discover(l, time.Hour))
	empty := slices.Clone(l.Tools)
	empty[1].Annotations = nil // &Annotations{} and nil differ
	if res := catalogtest.MustPut(t, s, "full", catalogtest.Discover(mcp.Listing{Tools: empty}, 2*time.Hour)); res.Unchanged {
		t.Errorf("empty annotations dropped: Put = %+v, want a new version", res)
	}
}

// testOversizedFields: a tool too large even compressed because of a new
// field is refused with the reason, the rest stored.
func testOversizedFields(t *testing.T, s catalogtest.Store) {
	big := `{"description":"` + incompressible(700_000) + `"}`
	l := mcp.Listing{Tools: []mcp.Tool{
		{Name: "big-output", InputSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(big)},
		{Name: "big-meta", InputSchema: json.RawMessage(`{}`), Meta: json.RawMessage(big)},
		{Name: "big-annotations", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{Other: json.RawMessage(big)}},
		{Name: "big-title", InputSchema: json.RawMessage(`{}`), Title: incompressible(700_000)},
		catalogtest.FullTool("ok", "x"),
	}}
	res := catalogtest.MustPut(t, s, "big-fields", catalogtest.Discover(l, 0))
	if res.ToolCount != 1 || len(res.Refused) != 4 {
		t.Fatalf("Put = %d tools, refused %d; want 1 and 4", res.ToolCount, len(res.Refused))
	}
	for i, r := range res.Refused {
		var plain, zipped, limit int
		_, err := fmt.Sscanf(r.Reason, "tool definition too large to store: %d bytes, %d bytes compressed, over the %d-byte item limit", &plain, &zipped, &limit)
		if r.Name != l.Tools[i].Name || err != nil || zipped <= catalog.MaxItemBytes || limit != catalog.MaxItemBytes {
			t.Errorf("refusal %d = %+v (%v), want %s too large to store", i, r, err, l.Tools[i].Name)
		}
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "big-fields"), mcp.Listing{Tools: l.Tools[4:], Refused: res.Refused})
}

// modelListing has names a model accepts, dotted names, and names past 64
// characters, some sharing their first 51 characters.
func modelListing() mcp.Listing {
	long := strings.Repeat("n", 100)
	return mcp.Listing{Tools: []mcp.Tool{
		catalogtest.Tool("plain_name-1", "a"),
		catalogtest.Tool("files.read", "a"),
		catalogtest.Tool("files_read", "a"), // model-safe: keeps its name
		catalogtest.Tool("files.read.v2", "a"),
		catalogtest.Tool(long+"a", "a"),
		catalogtest.Tool(long+"b", "a"),
		catalogtest.Tool(strings.Repeat("x", 128), "a"),
		catalogtest.Tool(strings.Repeat("y", 65), "a"),
		catalogtest.Tool(strings.Repeat("z", 64), "a"), // model-safe: keeps its name
		catalogtest.Tool("ns.tool-1.2", "a"),
	}}
}

// testModelNames: every tool gets a distinct model-safe name, the name
// itself when it is model-safe, the mapping otherwise; the same listing
// gives the same names; Lookup takes either name and reports the
// server's.
func testModelNames(t *testing.T, s catalogtest.Store) {
	l := modelListing()
	res := catalogtest.MustPut(t, s, "models", catalogtest.Discover(l, 0))
	c := catalogtest.MustGet(t, s, "models")
	catalogtest.AssertContent(t, c, l)
	got := catalogtest.ModelNames(c.Tools)
	for _, tool := range l.Tools {
		want := tool.Name
		if !catalogtest.ModelNamePattern.MatchString(tool.Name) {
			want = catalogtest.MappedName(tool.Name, 12)
		}
		if got[tool.Name] != want {
			t.Errorf("model name of %q = %q, want %q", tool.Name, got[tool.Name], want)
		}
	}
	reversed := mcp.Listing{Tools: slices.Clone(l.Tools)}
	slices.Reverse(reversed.Tools)
	for i, other := range []mcp.Listing{l, reversed} {
		id := fmt.Sprintf("models-%d", i)
		catalogtest.MustPut(t, s, id, catalogtest.Discover(other, 0))
		if diff := cmp.Diff(got, catalogtest.ModelNames(catalogtest.MustGet(t, s, id).Tools)); diff != "" {
			t.Errorf("the same listing in %s gave other model names (-first +again):\n%s", id, diff)
		}
	}
	for _, tool := range c.Tools {
		found := catalog.Membership{Found: true, Name: tool.Name, Version: res.Version, ProtocolVersion: "2025-11-25"}
		assertLookup(t, s, "models", tool.ModelName, found)
		assertLookup(t, s, "models", tool.Name, found)
	}
	missing := catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "models", catalogtest.MappedName("files.read", 13), missing) // the shape of a model name
	assertLookup(t, s, "models", catalogtest.MappedName("not.listed", 12), missing) // a model name it would have
	assertLookup(t, s, "models", "files_read_000000000000", missing)                // hex of no tool
	assertLookup(t, s, "models", strings.ToUpper(got["files.read"]), missing)       // model names are exact

	next := mcp.Listing{Tools: append(slices.Clone(l.Tools[2:]), catalogtest.Tool("new.tool", "b"))}
	next.Tools[0] = catalogtest.Tool("files_read", "b") // changed, same name
	catalogtest.MustPut(t, s, "models", catalogtest.Discover(next, time.Minute))
	after := catalogtest.ModelNames(catalogtest.MustGet(t, s, "models").Tools)
	for _, tool := range next.Tools[:len(next.Tools)-1] {
		if after[tool.Name] != got[tool.Name] {
			t.Errorf("re-discovered %q: model name %q, was %q", tool.Name, after[tool.Name], got[tool.Name])
		}
	}
}

// testModelNamesStable: a tool keeps its model name while it keeps its
// name; a new tool whose own name another tool holds as its model name is
// mapped instead; without that history the name itself wins.
func testModelNamesStable(t *testing.T, s catalogtest.Store) {
	v1 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "1"), catalogtest.Tool("keep", "1")}}
	catalogtest.MustPut(t, s, "stable", catalogtest.Discover(v1, 0))
	held := catalogtest.ModelNames(catalogtest.MustGet(t, s, "stable").Tools)["a.b"]
	if held != catalogtest.MappedName("a.b", 12) {
		t.Fatalf("model name of a.b = %q, want %q", held, catalogtest.MappedName("a.b", 12))
	}

	// A new tool is named exactly what a.b holds.
	v2 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "2"), catalogtest.Tool(held, "2"), catalogtest.Tool("keep", "2")}}
	r2 := catalogtest.MustPut(t, s, "stable", catalogtest.Discover(v2, time.Minute))
	c2 := catalogtest.MustGet(t, s, "stable")
	catalogtest.AssertContent(t, c2, v2)
	m2 := catalogtest.ModelNames(c2.Tools)
	want := map[string]string{"a.b": held, held: catalogtest.MappedName(held, 12), "keep": "keep"}
	if diff := cmp.Diff(want, m2); diff != "" {
		t.Errorf("model names after a new tool took a held name (-want +got):\n%s", diff)
	}
	m := catalog.Membership{Found: true, Version: r2.Version, ProtocolVersion: "2025-11-25"}
	m.Name = "a.b"
	assertLookup(t, s, "stable", held, m) // one's model name and the other's name: the model name wins
	m.Name = held
	assertLookup(t, s, "stable", m2[held], m)

	// a.b leaves: the newcomer keeps its mapped model name, and its name
	// now finds it.
	v3 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool(held, "3"), catalogtest.Tool("keep", "3")}}
	r3 := catalogtest.MustPut(t, s, "stable", catalogtest.Discover(v3, 2*time.Minute))
	m3 := catalogtest.ModelNames(catalogtest.MustGet(t, s, "stable").Tools)
	if m3[held] != m2[held] || m3["keep"] != "keep" {
		t.Errorf("model names after a.b left: %v, want %s kept", m3, m2[held])
	}
	m = catalog.Membership{Found: true, Name: held, Version: r3.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "stable", held, m)
	assertLookup(t, s, "stable", m3[held], m)
	if res := catalogtest.MustPut(t, s, "stable", catalogtest.Discover(v3, 3*time.Minute)); !res.Unchanged {
		t.Errorf("same listing again = %+v, want unchanged", res)
	}

	// Without that history the same listing gives the name itself.
	catalogtest.MustPut(t, s, "stable-fresh", catalogtest.Discover(v2, 0))
	fresh := catalogtest.ModelNames(catalogtest.MustGet(t, s, "stable-fresh").Tools)
	want = map[string]string{"a.b": catalogtest.MappedName("a.b", 13), held: held, "keep": "keep"}
	if diff := cmp.Diff(want, fresh); diff != "" {
		t.Errorf("model names of a fresh catalog (-want +got):\n%s", diff)
	}
}

// testModelNamesExhausted: a tool every candidate model name of which is
// another tool's name is refused with a reason.
func testModelNamesExhausted(t *testing.T, s catalogtest.Store) {
	l := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("x.y", "a")}}
	for d := 12; d <= 62; d++ { // all but the last candidate
		l.Tools = append(l.Tools, catalogtest.Tool(catalogtest.MappedName("x.y", d), "a"))
	}
	catalogtest.MustPut(t, s, "exhausted", catalogtest.Discover(l, 0))
	if got := catalogtest.ModelNames(catalogtest.MustGet(t, s, "exhausted").Tools)["x.y"]; got != catalogtest.MappedName("x.y", 63) {
		t.Errorf("x.y with one candidate left: model name %q, want %q", got, catalogtest.MappedName("x.y", 63))
	}
	l.Tools = append(l.Tools, catalogtest.Tool(catalogtest.MappedName("x.y", 63), "a"))
	res := catalogtest.MustPut(t, s, "exhausted-all", catalogtest.Discover(l, 0))
	if res.ToolCount != len(l.Tools)-1 || len(res.Refused) != 1 || res.Refused[0].Name != "x.y" ||
		!strings.Contains(res.Refused[0].Reason, "model-safe name") {
		t.Fatalf("Put = %d tools, refused %v; want x.y refused for want of a model name", res.ToolCount, res.Refused)
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "exhausted-all"), mcp.Listing{Tools: l.Tools[1:], Refused: res.Refused})
}

// testLookupHints: Lookup reports the found tool's four hints, by name
// and by model name, and nothing else of its annotations; nil for a tool
// without hints and for an absent one. A changed hint is a new version
// whose Lookup reports it.
func testLookupHints(t *testing.T, s catalogtest.Store) {
	idem := &mcp.Annotations{IdempotentHint: hint(true), ReadOnlyHint: hint(false), OpenWorldHint: hint(true)}
	l := mcp.Listing{Tools: []mcp.Tool{
		catalogtest.FullTool("full", "a"), // read-only, not destructive, other keys
		{Name: "ns.write", InputSchema: json.RawMessage(`{}`), Annotations: idem},
		{Name: "bare-hints", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{Other: json.RawMessage(`{"title":"x"}`)}},
		catalogtest.Tool("plain", "a"),
	}}
	for step := range 3 {
		res := catalogtest.MustPut(t, s, "hints", catalogtest.Discover(l, time.Duration(step)*time.Minute))
		models := catalogtest.ModelNames(catalogtest.MustGet(t, s, "hints").Tools)
		want := map[string]*mcp.Annotations{
			"full":       {ReadOnlyHint: l.Tools[0].Annotations.ReadOnlyHint, DestructiveHint: l.Tools[0].Annotations.DestructiveHint},
			"ns.write":   l.Tools[1].Annotations,
			"bare-hints": nil,
			"plain":      nil,
		}
		for name, hints := range want {
			m := catalog.Membership{Found: true, Name: name, Annotations: hints, Version: res.Version, ProtocolVersion: "2025-11-25"}
			assertLookup(t, s, "hints", name, m)
			assertLookup(t, s, "hints", models[name], m)
		}
		assertLookup(t, s, "hints", "absent", catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"})
		switch step {
		case 0: // unchanged next
		case 1:
			l.Tools = slices.Clone(l.Tools)
			l.Tools[1].Annotations = &mcp.Annotations{DestructiveHint: hint(true)}
		}
	}
}

// hint returns a pointer to b, for an annotation hint.
func hint(b bool) *bool { return &b }
