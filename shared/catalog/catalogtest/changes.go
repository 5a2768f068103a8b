package catalogtest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// ChangesOf is the uncut Changes of the three lists, sorted.
func ChangesOf(added, removed, changed []string) *catalog.Changes {
	c := &catalog.Changes{
		Added: slices.Sorted(slices.Values(added)), Removed: slices.Sorted(slices.Values(removed)),
		Changed:    slices.Sorted(slices.Values(changed)),
		AddedCount: len(added), RemovedCount: len(removed), ChangedCount: len(changed),
	}
	for _, l := range []*[]string{&c.Added, &c.Removed, &c.Changed} {
		if *l == nil {
			*l = []string{}
		}
	}
	return c
}

// Names returns the names of l's tools.
func Names(l mcp.Listing) []string {
	names := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		names[i] = t.Name
	}
	return names
}

// AssertChanges fails unless res reports want and the catalog of id
// holds it, discovered at at.
func AssertChanges(t testing.TB, s catalog.Store, id string, res catalog.PutResult, want *catalog.Changes, at time.Time) {
	t.Helper()
	if diff := cmp.Diff(want, res.Changes); diff != "" {
		t.Errorf("Put's changes (-want +got):\n%s", diff)
	}
	c := MustGet(t, s, id)
	if diff := cmp.Diff(want, c.Changes); diff != "" {
		t.Errorf("stored changes (-want +got):\n%s", diff)
	}
	if !c.ChangedAt.Equal(at) || !c.DiscoveredAt.Equal(at) {
		t.Errorf("changed at %s, discovered at %s; want both %s", c.ChangedAt, c.DiscoveredAt, at)
	}
}
