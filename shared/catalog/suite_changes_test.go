package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// testChanges: each new version reports and keeps its diff by tool name
// against the version it replaced; a tool is changed when any of its
// fields is; an unchanged or superseded Put reports none and the catalog
// keeps the last diff.
func testChanges(t *testing.T, s catalogtest.Store) {
	tools := append(catalogtest.Listing(5, "a").Tools, catalogtest.FullTool("full", "a"))
	step := 0
	put := func(l []mcp.Tool, want *catalog.Changes) {
		t.Helper()
		at := catalogtest.T0.Add(time.Duration(step) * time.Minute)
		step++
		res := catalogtest.MustPut(t, s, "diff", catalogtest.Discover(mcp.Listing{Tools: l}, time.Duration(step-1)*time.Minute))
		if res.Unchanged || res.Superseded {
			t.Fatalf("step %d: Put = %+v, want a new version", step-1, res)
		}
		catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "diff"), mcp.Listing{Tools: l})
		catalogtest.AssertChanges(t, s, "diff", res, want, at)
	}
	put(tools, catalogtest.ChangesOf(catalogtest.Names(mcp.Listing{Tools: tools}), nil, nil)) // the first version: all added
	tools = append(tools, catalogtest.Tool("tool-5", "a"))
	put(tools, catalogtest.ChangesOf([]string{"tool-5"}, nil, nil))
	tools = tools[1:]
	put(tools, catalogtest.ChangesOf(nil, []string{"tool-0"}, nil))
	tools = slices.Clone(tools)
	tools[0] = catalogtest.Tool("tool-1", "b")
	put(tools, catalogtest.ChangesOf(nil, nil, []string{"tool-1"}))
	for _, change := range []func(*mcp.Tool){
		func(t *mcp.Tool) { t.Title = "other" },
		func(t *mcp.Tool) { t.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		func(t *mcp.Tool) { t.Annotations.ReadOnlyHint = nil },
		func(t *mcp.Tool) { t.Meta = json.RawMessage(`{"v":2}`) },
		func(t *mcp.Tool) { t.InputSchema = json.RawMessage(`{"type":"object"}`) },
	} {
		tools = slices.Clone(tools)
		change(&tools[4])
		put(tools, catalogtest.ChangesOf(nil, nil, []string{"full"}))
	}
	// Added, removed and changed at once.
	tools = append(slices.Clone(tools[1:]), catalogtest.Tool("new", "a"))
	tools[0] = catalogtest.Tool("tool-2", "c")
	put(tools, catalogtest.ChangesOf([]string{"new"}, []string{"tool-1"}, []string{"tool-2"}))
	all := make([]mcp.Tool, len(tools))
	for i, tool := range tools {
		all[i] = catalogtest.Tool(tool.Name, "all")
	}
	put(all, catalogtest.ChangesOf(nil, nil, catalogtest.Names(mcp.Listing{Tools: all})))
	changedAt := catalogtest.T0.Add(time.Duration(step-1) * time.Minute)

	// Unchanged: no changes reported, the last diff kept.
	d := catalogtest.Discover(mcp.Listing{Tools: all}, time.Hour)
	d.ServerVersion = "2.0.0"
	res := catalogtest.MustPut(t, s, "diff", d)
	if !res.Unchanged {
		t.Fatalf("same listing = %+v, want unchanged", res)
	}
	catalogtest.AssertChanges(t, s, "diff", catalog.PutResult{Changes: catalogtest.MustGet(t, s, "diff").Changes}, catalogtest.ChangesOf(nil, nil, catalogtest.Names(mcp.Listing{Tools: all})), changedAt)
	if res.Changes != nil {
		t.Errorf("unchanged Put reports changes %+v", res.Changes)
	}
	// Superseded: nothing reported.
	if res := catalogtest.MustPut(t, s, "diff", catalogtest.Discover(catalogtest.Listing(2, "old"), time.Second)); !res.Superseded || res.Changes != nil {
		t.Errorf("older Put = %+v, want superseded without changes", res)
	}
	// Only the order changed: a new version whose tools are all the same.
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	step = 120
	put(reversed, catalogtest.ChangesOf(nil, nil, nil))
}

// testChangesRace: of racing discoveries, the winner's changes are against
// the version it replaced, and are what the catalog keeps.
func testChangesRace(t *testing.T, s catalogtest.Store) {
	const writers = 6
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results = make([]catalog.PutResult, writers)
	)
	for i := range writers {
		wg.Go(func() {
			l := catalogtest.Listing(40+i, fmt.Sprintf("w%d", i))
			res, err := s.Put(context.Background(), "diff-race", catalogtest.Discover(l, time.Duration(writers-i)*time.Second))
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
			mu.Lock()
			results[i] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	c := catalogtest.MustGet(t, s, "diff-race")
	catalogtest.AssertContent(t, c, catalogtest.Listing(40, "w0"))
	if diff := cmp.Diff(c.Changes, results[0].Changes); diff != "" {
		t.Errorf("winner's changes are not the stored ones (-stored +reported):\n%s", diff)
	}
	// The winner replaced nothing (all added) or writer i's 40+i tools
	// of another tag (all changed, i removed).
	names := catalogtest.Names(catalogtest.Listing(40, "w0"))
	ok := cmp.Equal(catalogtest.ChangesOf(names, nil, nil), c.Changes)
	for i := 1; i < writers && !ok; i++ {
		ok = cmp.Equal(catalogtest.ChangesOf(nil, catalogtest.Names(catalogtest.Listing(40+i, "x"))[40:], names), c.Changes)
	}
	if !ok {
		t.Errorf("winner's changes %+v are against no version it could have replaced", c.Changes)
	}
	for i, r := range results[1:] {
		if r.Superseded && r.Changes != nil {
			t.Errorf("superseded writer %d reports changes", i+1)
		}
	}
}

// testChangesBound: names past catalog.MaxChangeBytes are cut, each list
// to a sorted prefix, while the counts stay complete.
func testChangesBound(t *testing.T, s catalogtest.Store) {
	const n = 700
	listing := func(prefix, tag string) mcp.Listing {
		l := mcp.Listing{Tools: make([]mcp.Tool, n)}
		for i := range n {
			l.Tools[i] = catalogtest.Tool(fmt.Sprintf("%s-%s-%04d", prefix, strings.Repeat("n", 100), i), tag)
		}
		return l
	}
	a := listing("a", "1")
	b := mcp.Listing{Tools: append(listing("b", "1").Tools, listing("a", "2").Tools[:n/2]...)} // a's second half removed
	for i, st := range []struct {
		l                     mcp.Listing
		added, removed, chngd []string
	}{
		{a, catalogtest.Names(a), nil, nil},
		{b, catalogtest.Names(b)[:n], catalogtest.Names(a)[n/2:], catalogtest.Names(a)[:n/2]},
	} {
		res := catalogtest.MustPut(t, s, "diff-bound", catalogtest.Discover(st.l, time.Duration(i)*time.Minute))
		got := res.Changes
		if got == nil {
			t.Fatalf("step %d: no changes", i)
		}
		full := catalogtest.ChangesOf(st.added, st.removed, st.chngd)
		if got.AddedCount != full.AddedCount || got.RemovedCount != full.RemovedCount || got.ChangedCount != full.ChangedCount {
			t.Errorf("step %d: counts %d/%d/%d, want %d/%d/%d", i, got.AddedCount, got.RemovedCount, got.ChangedCount,
				full.AddedCount, full.RemovedCount, full.ChangedCount)
		}
		size := 0
		for _, l := range [][2][]string{{full.Added, got.Added}, {full.Removed, got.Removed}, {full.Changed, got.Changed}} {
			if len(l[1]) > len(l[0]) || !slices.Equal(l[0][:len(l[1])], l[1]) {
				t.Errorf("step %d: listed %d names, not a sorted prefix of the %d", i, len(l[1]), len(l[0]))
			}
			if len(l[0]) > 0 && len(l[1]) == 0 {
				t.Errorf("step %d: a list of %d names kept none", i, len(l[0]))
			}
			for _, name := range l[1] {
				size += len(name) + 8
			}
		}
		if size > catalog.MaxChangeBytes || size < catalog.MaxChangeBytes-200 {
			t.Errorf("step %d: %d bytes of names listed, want just under %d", i, size, catalog.MaxChangeBytes)
		}
		if diff := cmp.Diff(got, catalogtest.MustGet(t, s, "diff-bound").Changes); diff != "" {
			t.Errorf("step %d: stored changes (-reported +stored):\n%s", i, diff)
		}
	}
}
