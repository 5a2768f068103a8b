package catalog_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// lookupRequests looks name up and returns the requests it made.
func lookupRequests(t *testing.T, s catalog.Store, c *countingAPI, id, name string, want catalog.Membership) map[string]int {
	t.Helper()
	c.take()
	got, err := s.Lookup(context.Background(), id, name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	if diff := cmp.Diff(catalogtest.LookupWant(name, want), got); diff != "" {
		t.Errorf("Lookup(%q) (-want +got):\n%s", name, diff)
	}
	return c.take()
}

// TestModelNameRequests counts what model names cost: nothing on Put with
// the name index; on Lookup, a Query for a string shaped like a mapped
// model name (docs/catalog.md).
func TestModelNameRequests(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t)
	l := catalogtest.Listing(60, "a")
	for i := range 10 {
		l.Tools[i].Name = fmt.Sprintf("ns.tool-%d", i)
	}
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, 0))
	if diff := cmp.Diff(map[string]int{"GetItem": 1, "BatchWriteItem": 3, "UpdateItem": 1}, c.take()); diff != "" {
		t.Errorf("first put: requests (-want +got):\n%s", diff)
	}
	held := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)["ns.tool-0"]
	next := mcp.Listing{Tools: append(slices.Clone(l.Tools), catalogtest.Tool(held, "b"))} // wants a held name
	c.take()
	v := catalogtest.MustPut(t, s, "id", catalogtest.Discover(next, time.Minute)).Version
	// As any put adding a tool: head, old manifest, the new tool and the
	// marker, flip, the old marker.
	if diff := cmp.Diff(map[string]int{"GetItem": 2, "BatchWriteItem": 1 + 1, "UpdateItem": 1}, c.take()); diff != "" {
		t.Errorf("replacing put with a contested model name: requests (-want +got):\n%s", diff)
	}
	models := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)
	m := func(name string) catalog.Membership {
		return catalog.Membership{Found: true, Name: name, Version: v, ProtocolVersion: "2025-11-25"}
	}
	for _, tc := range []struct {
		lookup string
		want   catalog.Membership
		reads  map[string]int
	}{
		{"tool-10", m("tool-10"), map[string]int{"GetItem": 1}},                         // a name, its own model name
		{"ns.tool-1", m("ns.tool-1"), map[string]int{"GetItem": 1}},                     // a name
		{models["ns.tool-1"], m("ns.tool-1"), map[string]int{"GetItem": 1, "Query": 1}}, // a mapped model name
		{held, m("ns.tool-0"), map[string]int{"GetItem": 1, "Query": 1}},                // a model name and a name
		{models[held], m(held), map[string]int{"GetItem": 1, "Query": 1}},               // the newcomer's model name
		{"x_000000000000", catalog.Membership{Version: v, ProtocolVersion: "2025-11-25"}, // shaped, absent
			map[string]int{"GetItem": 2, "Query": 1}},
	} {
		if diff := cmp.Diff(tc.reads, lookupRequests(t, s, c, "id", tc.lookup, tc.want)); diff != "" {
			t.Errorf("Lookup(%q): requests (-want +got):\n%s", tc.lookup, diff)
		}
	}
}

// TestModelNamesWithoutNameIndex: a catalog over the index limit reads
// its replaced version's items once, only when two tools want one name.
func TestModelNamesWithoutNameIndex(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t, catalog.WithNameIndexMax(1))
	v1 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "1"), catalogtest.Tool("keep", "1")}}
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(v1, 0))
	held := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)["a.b"]

	v2 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "2"), catalogtest.Tool("keep", "2")}}
	c.take()
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(v2, time.Minute))
	if got := c.take()["Query"]; got != 0 {
		t.Errorf("uncontested put: %d Queries, want 0", got)
	}
	v3 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "3"), catalogtest.Tool(held, "3"), catalogtest.Tool("keep", "3")}}
	r3 := catalogtest.MustPut(t, s, "id", catalogtest.Discover(v3, 2*time.Minute))
	if got := c.take()["Query"]; got != 1 { // the replaced version's one partition
		t.Errorf("contested put: %d Queries, want 1", got)
	}
	models := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)
	if models["a.b"] != held || models[held] != catalogtest.MappedName(held, 12) {
		t.Errorf("model names %v, want a.b to keep %s", models, held)
	}
	m := catalog.Membership{Found: true, Name: "a.b", Version: r3.Version, ProtocolVersion: "2025-11-25"}
	if diff := cmp.Diff(map[string]int{"GetItem": 2, "Query": 1}, lookupRequests(t, s, c, "id", held, m)); diff != "" { // head, manifest, partition
		t.Errorf("Lookup by model name: requests (-want +got):\n%s", diff)
	}
	m.Name = "keep"
	if diff := cmp.Diff(map[string]int{"GetItem": 2}, lookupRequests(t, s, c, "id", "keep", m)); diff != "" { // head, manifest
		t.Errorf("Lookup by name: requests (-want +got):\n%s", diff)
	}
}

// TestModelExceptionsPastTheHeadLimit: exceptions that do not fit the
// head are read from the replaced version's items, and still kept.
func TestModelExceptionsPastTheHeadLimit(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t, catalog.WithModelExceptionMax(0))
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "1")}}, 0))
	held := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)["a.b"]
	v2 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a.b", "2"), catalogtest.Tool(held, "2")}} // held is mapped: an exception
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(v2, time.Minute))
	want := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)

	v3 := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool(held, "3"), catalogtest.Tool("new", "3")}}
	c.take()
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(v3, 2*time.Minute))
	if got := c.take()["Query"]; got != 1 { // the replaced version's partition, for its model names
		t.Errorf("put after exceptions past the limit: %d Queries, want 1", got)
	}
	if got := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools); got[held] != want[held] || got["new"] != "new" {
		t.Errorf("model names %v, want %s to keep %s", got, held, want[held])
	}
}

// oldListing is a catalog as stored before tools had model names and
// optional fields; oldHash is its content hash as that code computed it.
var oldListing = mcp.Listing{
	Tools: []mcp.Tool{
		{Name: "search", Description: "finds", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "get_user", InputSchema: []byte(`{}`)},
	},
	Refused: []mcp.Refusal{{Name: "bad", Reason: "why"}},
}

const (
	oldHash    = "7595abb34d09ba8327fdba70383a7aec1bb9215d805ec96d11662523f32fe85b"
	oldVersion = "20261129T120000.000000000Z-00000001"
)

// TestDirReadsTheOldLayout writes a catalog's files as stored before
// model names, reads them, and confirms them unchanged.
func TestDirReadsTheOldLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "c_old")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at := catalogtest.T0.Format(time.RFC3339Nano)
	head := fmt.Sprintf(`{"id":"old","version":%q,"latest":%q,"content_hash":%q,"protocol_version":"2025-11-25",`+
		`"server_name":"fixture","server_version":"1.0.0","discovered_at":%q,"checked_at":%q,`+
		`"tool_count":2,"refused_count":1,"names":["get_user","search"]}`, oldVersion, oldVersion, oldHash, at, at)
	version := fmt.Sprintf(`{"tools":[{"name":"search","description":"finds","input_schema":%q},{"name":"get_user","input_schema":"e30="}],`+
		`"refused":[{"name":"bad","reason":"why"}]}`, base64.StdEncoding.EncodeToString([]byte(`{"type":"object"}`)))
	for name, body := range map[string]string{"head.json": head, oldVersion + ".json": version} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := catalog.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	assertOldCatalog(t, s)
	if res := catalogtest.MustPut(t, s, "old", catalogtest.Discover(oldListing, time.Minute)); !res.Unchanged || res.Version != oldVersion {
		t.Errorf("same listing over the old layout = %+v, want unchanged %s", res, oldVersion)
	}
	assertReplacesOld(t, s, func() {})
}

func assertOldCatalog(t *testing.T, s catalog.Store) {
	t.Helper()
	c := catalogtest.MustGet(t, s, "old")
	catalogtest.AssertContent(t, c, oldListing)
	if c.Changes != nil || !c.ChangedAt.IsZero() {
		t.Errorf("old catalog: changes %+v at %s, want none", c.Changes, c.ChangedAt)
	}
	if diff := cmp.Diff(map[string]string{"search": "search", "get_user": "get_user"}, catalogtest.ModelNames(c.Tools)); diff != "" {
		t.Errorf("model names of an old catalog (-want +got):\n%s", diff)
	}
	if c.ContentHash != oldHash || c.Version != oldVersion {
		t.Errorf("old catalog: version %s hash %s, want %s and %s", c.Version, c.ContentHash, oldVersion, oldHash)
	}
	m, err := s.Lookup(context.Background(), "old", "get_user")
	if err != nil || !m.Found || m.Name != "" {
		t.Errorf("Lookup(get_user) in an old catalog = %+v, %v; want found", m, err)
	}
}

// assertReplacesOld replaces the old catalog with one that adds a tool
// with every field and a dotted name and changes search: the diff is
// computed from the old items' fields, which carry no tool hash.
// afterPut runs right after the replacing Put.
func assertReplacesOld(t *testing.T, s catalog.Store, afterPut func()) {
	t.Helper()
	l := mcp.Listing{Tools: append(slices.Clone(oldListing.Tools), catalogtest.FullTool("new.tool", "n")), Refused: oldListing.Refused}
	l.Tools[0].Description = "finds more"
	res := catalogtest.MustPut(t, s, "old", catalogtest.Discover(l, 2*time.Minute))
	afterPut()
	if res.Unchanged {
		t.Fatalf("new listing over the old layout = %+v, want a new version", res)
	}
	catalogtest.AssertChanges(t, s, "old", res, catalogtest.ChangesOf([]string{"new.tool"}, nil, []string{"search"}), catalogtest.T0.Add(2*time.Minute))
	c := catalogtest.MustGet(t, s, "old")
	catalogtest.AssertContent(t, c, l)
	if got := catalogtest.ModelNames(c.Tools); got["search"] != "search" || got["new.tool"] != catalogtest.MappedName("new.tool", 12) {
		t.Errorf("model names after replacing the old layout: %v", got)
	}
}
