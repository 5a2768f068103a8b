package catalogtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// MappedName is the model name the catalog's mapping gives name with
// digits hex digits (DESIGN.md): every character outside [A-Za-z0-9_-]
// becomes '_', the result is cut to 63-digits bytes, then '_' and the
// first digits hex digits of sha256(name) follow.
func MappedName(name string, digits int) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() == 63-digits {
			break
		}
		if r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	return b.String() + "_" + hex.EncodeToString(sum[:])[:digits]
}

// ModelNames maps each tool's name to its model name.
func ModelNames(tools []mcp.Tool) map[string]string {
	m := make(map[string]string, len(tools))
	for _, t := range tools {
		m[t.Name] = t.ModelName
	}
	return m
}

func hint(b bool) *bool { return &b }

// FullTool returns a tool named name with every optional field set; the
// JSON carries characters encoding/json would escape.
func FullTool(name, tag string) mcp.Tool {
	t := Tool(name, tag)
	t.Title = "Full <" + tag + "> & more"
	t.OutputSchema = json.RawMessage(`{"type":"object","properties":{"html":{"const":"<&>` + tag + `"}}}`)
	t.Annotations = &mcp.Annotations{
		ReadOnlyHint:    hint(true),
		DestructiveHint: hint(false),
		Other:           json.RawMessage(`{"title":"<b>` + tag + `</b>","x-vendor":[1,2]}`),
	}
	t.Meta = json.RawMessage(`{"ui/resourceUri":"ui://widget/` + tag + `"}`)
	return t
}

// testFullEntries: title, output schema, annotations and meta round trip
// exactly, plain and compressed; each is part of the content hash.
func testFullEntries(t *testing.T, s Store) {
	zipped := FullTool("zipped", "z")
	zipped.Description = incompressible(450_000) // fits only compressed
	l := mcp.Listing{Tools: []mcp.Tool{
		FullTool("full", "a"),
		{Name: "bare-hints", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{}}, // present, all empty
		{Name: "open-world", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{OpenWorldHint: hint(true), IdempotentHint: hint(false)}},
		{Name: "titled", Title: "Only a title", InputSchema: json.RawMessage(`{}`)},
		Tool("plain", "a"),
		zipped,
	}}
	v := MustPut(t, s, "full", Discover(l, 0)).Version
	AssertContent(t, MustGet(t, s, "full"), l)
	if res := MustPut(t, s, "full", Discover(l, time.Minute)); !res.Unchanged {
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
		c[0] = FullTool("full", "a")
		changes[what](&c[0])
		changed := mcp.Listing{Tools: c}
		res := MustPut(t, s, "full", Discover(changed, time.Duration(i+2)*time.Minute))
		if res.Unchanged || res.Version == v {
			t.Errorf("%s changed: Put = %+v, want a new version", what, res)
		}
		v = res.Version
		AssertContent(t, MustGet(t, s, "full"), changed)
	}
	MustPut(t, s, "full", Discover(l, time.Hour))
	empty := slices.Clone(l.Tools)
	empty[1].Annotations = nil // &Annotations{} and nil differ
	if res := MustPut(t, s, "full", Discover(mcp.Listing{Tools: empty}, 2*time.Hour)); res.Unchanged {
		t.Errorf("empty annotations dropped: Put = %+v, want a new version", res)
	}
}

// testOversizedFields: a tool too large even compressed because of a new
// field is refused with the reason, the rest stored.
func testOversizedFields(t *testing.T, s Store) {
	big := `{"description":"` + incompressible(700_000) + `"}`
	l := mcp.Listing{Tools: []mcp.Tool{
		{Name: "big-output", InputSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(big)},
		{Name: "big-meta", InputSchema: json.RawMessage(`{}`), Meta: json.RawMessage(big)},
		{Name: "big-annotations", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{Other: json.RawMessage(big)}},
		{Name: "big-title", InputSchema: json.RawMessage(`{}`), Title: incompressible(700_000)},
		FullTool("ok", "x"),
	}}
	res := MustPut(t, s, "big-fields", Discover(l, 0))
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
	AssertContent(t, MustGet(t, s, "big-fields"), mcp.Listing{Tools: l.Tools[4:], Refused: res.Refused})
}

// modelListing has names a model accepts, dotted names, and names past 64
// characters, some sharing their first 51 characters.
func modelListing() mcp.Listing {
	long := strings.Repeat("n", 100)
	return mcp.Listing{Tools: []mcp.Tool{
		Tool("plain_name-1", "a"),
		Tool("files.read", "a"),
		Tool("files_read", "a"), // model-safe: keeps its name
		Tool("files.read.v2", "a"),
		Tool(long+"a", "a"),
		Tool(long+"b", "a"),
		Tool(strings.Repeat("x", 128), "a"),
		Tool(strings.Repeat("y", 65), "a"),
		Tool(strings.Repeat("z", 64), "a"), // model-safe: keeps its name
		Tool("ns.tool-1.2", "a"),
	}}
}

// testModelNames: every tool gets a distinct model-safe name, the name
// itself when it is model-safe, the mapping otherwise; the same listing
// gives the same names; Lookup takes either name and reports the
// server's.
func testModelNames(t *testing.T, s Store) {
	l := modelListing()
	res := MustPut(t, s, "models", Discover(l, 0))
	c := MustGet(t, s, "models")
	AssertContent(t, c, l)
	got := ModelNames(c.Tools)
	for _, tool := range l.Tools {
		want := tool.Name
		if !ModelNamePattern.MatchString(tool.Name) {
			want = MappedName(tool.Name, 12)
		}
		if got[tool.Name] != want {
			t.Errorf("model name of %q = %q, want %q", tool.Name, got[tool.Name], want)
		}
	}
	reversed := mcp.Listing{Tools: slices.Clone(l.Tools)}
	slices.Reverse(reversed.Tools)
	for i, other := range []mcp.Listing{l, reversed} {
		id := fmt.Sprintf("models-%d", i)
		MustPut(t, s, id, Discover(other, 0))
		if diff := cmp.Diff(got, ModelNames(MustGet(t, s, id).Tools)); diff != "" {
			t.Errorf("the same listing in %s gave other model names (-first +again):\n%s", id, diff)
		}
	}
	for _, tool := range c.Tools {
		found := catalog.Membership{Found: true, Name: tool.Name, Version: res.Version, ProtocolVersion: "2025-11-25"}
		assertLookup(t, s, "models", tool.ModelName, found)
		assertLookup(t, s, "models", tool.Name, found)
	}
	missing := catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "models", MappedName("files.read", 13), missing)       // the shape of a model name
	assertLookup(t, s, "models", MappedName("not.listed", 12), missing)       // a model name it would have
	assertLookup(t, s, "models", "files_read_000000000000", missing)          // hex of no tool
	assertLookup(t, s, "models", strings.ToUpper(got["files.read"]), missing) // model names are exact

	next := mcp.Listing{Tools: append(slices.Clone(l.Tools[2:]), Tool("new.tool", "b"))}
	next.Tools[0] = Tool("files_read", "b") // changed, same name
	MustPut(t, s, "models", Discover(next, time.Minute))
	after := ModelNames(MustGet(t, s, "models").Tools)
	for _, tool := range next.Tools[:len(next.Tools)-1] {
		if after[tool.Name] != got[tool.Name] {
			t.Errorf("re-discovered %q: model name %q, was %q", tool.Name, after[tool.Name], got[tool.Name])
		}
	}
}

// testModelNamesStable: a tool keeps its model name while it keeps its
// name; a new tool whose own name another tool holds as its model name is
// mapped instead; without that history the name itself wins.
func testModelNamesStable(t *testing.T, s Store) {
	v1 := mcp.Listing{Tools: []mcp.Tool{Tool("a.b", "1"), Tool("keep", "1")}}
	MustPut(t, s, "stable", Discover(v1, 0))
	held := ModelNames(MustGet(t, s, "stable").Tools)["a.b"]
	if held != MappedName("a.b", 12) {
		t.Fatalf("model name of a.b = %q, want %q", held, MappedName("a.b", 12))
	}

	// A new tool is named exactly what a.b holds.
	v2 := mcp.Listing{Tools: []mcp.Tool{Tool("a.b", "2"), Tool(held, "2"), Tool("keep", "2")}}
	r2 := MustPut(t, s, "stable", Discover(v2, time.Minute))
	c2 := MustGet(t, s, "stable")
	AssertContent(t, c2, v2)
	m2 := ModelNames(c2.Tools)
	want := map[string]string{"a.b": held, held: MappedName(held, 12), "keep": "keep"}
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
	v3 := mcp.Listing{Tools: []mcp.Tool{Tool(held, "3"), Tool("keep", "3")}}
	r3 := MustPut(t, s, "stable", Discover(v3, 2*time.Minute))
	m3 := ModelNames(MustGet(t, s, "stable").Tools)
	if m3[held] != m2[held] || m3["keep"] != "keep" {
		t.Errorf("model names after a.b left: %v, want %s kept", m3, m2[held])
	}
	m = catalog.Membership{Found: true, Name: held, Version: r3.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "stable", held, m)
	assertLookup(t, s, "stable", m3[held], m)
	if res := MustPut(t, s, "stable", Discover(v3, 3*time.Minute)); !res.Unchanged {
		t.Errorf("same listing again = %+v, want unchanged", res)
	}

	// Without that history the same listing gives the name itself.
	MustPut(t, s, "stable-fresh", Discover(v2, 0))
	fresh := ModelNames(MustGet(t, s, "stable-fresh").Tools)
	want = map[string]string{"a.b": MappedName("a.b", 13), held: held, "keep": "keep"}
	if diff := cmp.Diff(want, fresh); diff != "" {
		t.Errorf("model names of a fresh catalog (-want +got):\n%s", diff)
	}
}

// testModelNamesExhausted: a tool every candidate model name of which is
// another tool's name is refused with a reason.
func testModelNamesExhausted(t *testing.T, s Store) {
	l := mcp.Listing{Tools: []mcp.Tool{Tool("x.y", "a")}}
	for d := 12; d <= 62; d++ { // all but the last candidate
		l.Tools = append(l.Tools, Tool(MappedName("x.y", d), "a"))
	}
	MustPut(t, s, "exhausted", Discover(l, 0))
	if got := ModelNames(MustGet(t, s, "exhausted").Tools)["x.y"]; got != MappedName("x.y", 63) {
		t.Errorf("x.y with one candidate left: model name %q, want %q", got, MappedName("x.y", 63))
	}
	l.Tools = append(l.Tools, Tool(MappedName("x.y", 63), "a"))
	res := MustPut(t, s, "exhausted-all", Discover(l, 0))
	if res.ToolCount != len(l.Tools)-1 || len(res.Refused) != 1 || res.Refused[0].Name != "x.y" ||
		!strings.Contains(res.Refused[0].Reason, "model-safe name") {
		t.Fatalf("Put = %d tools, refused %v; want x.y refused for want of a model name", res.ToolCount, res.Refused)
	}
	AssertContent(t, MustGet(t, s, "exhausted-all"), mcp.Listing{Tools: l.Tools[1:], Refused: res.Refused})
}

// testLookupHints: Lookup reports the found tool's four hints, by name
// and by model name, and nothing else of its annotations; nil for a tool
// without hints and for an absent one. A changed hint is a new version
// whose Lookup reports it.
func testLookupHints(t *testing.T, s Store) {
	idem := &mcp.Annotations{IdempotentHint: hint(true), ReadOnlyHint: hint(false), OpenWorldHint: hint(true)}
	l := mcp.Listing{Tools: []mcp.Tool{
		FullTool("full", "a"), // read-only, not destructive, other keys
		{Name: "ns.write", InputSchema: json.RawMessage(`{}`), Annotations: idem},
		{Name: "bare-hints", InputSchema: json.RawMessage(`{}`), Annotations: &mcp.Annotations{Other: json.RawMessage(`{"title":"x"}`)}},
		Tool("plain", "a"),
	}}
	for step := range 3 {
		res := MustPut(t, s, "hints", Discover(l, time.Duration(step)*time.Minute))
		models := ModelNames(MustGet(t, s, "hints").Tools)
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
