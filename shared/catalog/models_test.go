package catalog_test

import (
	"context"
	"fmt"
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
