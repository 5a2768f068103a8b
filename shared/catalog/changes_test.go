package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// TestChangeRequests counts what diffs cost: nothing on a first or an
// unchanged Put; a replacing Put reads the replaced version's shard once,
// before writing, and deletes it from those keys, so it makes the requests
// it made before diffs (docs/catalog.md).
func TestChangeRequests(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t)
	batches := func(n int) int { return (n + catalog.MaxBatchItems - 1) / catalog.MaxBatchItems }
	// replacing is a replacing Put of n tools over old: head, one Query of
	// the old shard, the marker and n items, flip, old's items, its marker.
	replacing := func(n, old int) map[string]int {
		return map[string]int{"GetItem": 1, "Query": 1, "BatchWriteItem": batches(1+n) + batches(old) + 1, "UpdateItem": 1}
	}
	base := catalogtest.Listing(60, "a")
	changeOne := slices.Clone(base.Tools)
	changeOne[7] = catalogtest.Tool("tool-7", "b")
	steps := []struct {
		name  string
		tools []mcp.Tool
		want  map[string]int
		diff  *catalog.Changes
	}{
		{"first", base.Tools, map[string]int{"GetItem": 1, "BatchWriteItem": batches(61), "UpdateItem": 1},
			catalogtest.ChangesOf(catalogtest.Names(base), nil, nil)},
		{"unchanged", base.Tools, map[string]int{"GetItem": 1, "UpdateItem": 1}, nil},
		{"add one", append(slices.Clone(base.Tools), catalogtest.Tool("new", "a")), replacing(61, 60),
			catalogtest.ChangesOf([]string{"new"}, nil, nil)},
		{"remove two", base.Tools[:59], replacing(59, 61),
			catalogtest.ChangesOf(nil, []string{"new", "tool-59"}, nil)},
		{"change one", changeOne[:59], replacing(59, 59), catalogtest.ChangesOf(nil, nil, []string{"tool-7"})},
		{"change all", catalogtest.Listing(59, "c").Tools, replacing(59, 59),
			catalogtest.ChangesOf(nil, nil, catalogtest.Names(catalogtest.Listing(59, "c")))},
		{"unchanged again", catalogtest.Listing(59, "c").Tools, map[string]int{"GetItem": 1, "UpdateItem": 1}, nil},
	}
	for i, st := range steps {
		c.take()
		res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(mcp.Listing{Tools: st.tools}, time.Duration(i)*time.Minute))
		if diff := cmp.Diff(st.want, c.take()); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.diff, res.Changes); diff != "" {
			t.Errorf("%s: changes (-want +got):\n%s", st.name, diff)
		}
		catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
	}
	if diff := cmp.Diff(steps[5].diff, catalogtest.MustGet(t, s, "id").Changes); diff != "" {
		t.Errorf("changes kept over an unchanged check (-want +got):\n%s", diff)
	}
}
