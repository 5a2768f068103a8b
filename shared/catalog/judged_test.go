package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestJudged: the head's record of the rules that judged a version is
// answered only for those rules and while that version is current, and
// survives an unchanged check; a record for a replaced version is not made.
func TestJudged(t *testing.T) {
	t.Parallel()
	s := catalogtest.NewDynamo(t, awstest.SharedMoto(t))
	ctx := t.Context()
	judged := func(step, rules string) catalog.Judged {
		t.Helper()
		j, err := s.Judged(ctx, "j", rules)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return j
	}
	if j := judged("no catalog", "r1"); j.Version != "" {
		t.Errorf("no catalog: judged %q", j.Version)
	}
	a := catalogtest.Listing(5, "a")
	v1 := catalogtest.MustPut(t, s, "j", catalogtest.Discover(a, 0)).Version
	if j := judged("nothing recorded", "r1"); j.Version != "" {
		t.Errorf("nothing recorded: judged %q", j.Version)
	}
	if err := s.RecordJudged(ctx, "j", v1, "r1"); err != nil {
		t.Fatal(err)
	}
	catalogtest.MustPut(t, s, "j", catalogtest.Discover(a, time.Minute)) // unchanged
	j := judged("recorded", "r1")
	if j.Version != v1 {
		t.Fatalf("recorded: judged %q, want %s", j.Version, v1)
	}
	for _, tool := range a.Tools {
		if !j.Unchanged(tool) {
			t.Errorf("%s is not unchanged", tool.Name)
		}
	}
	changed := a.Tools[2]
	changed.Description += " anew"
	if j.Unchanged(changed) {
		t.Error("a tool with a changed description is unchanged")
	}
	if j := judged("other rules", "r2"); j.Version != "" {
		t.Errorf("other rules: judged %q", j.Version)
	}

	b := a
	b.Tools = slices.Clone(a.Tools)
	b.Tools[2] = changed
	catalogtest.MustPut(t, s, "j", catalogtest.Discover(b, 2*time.Minute))
	if j := judged("replaced", "r1"); j.Version != "" {
		t.Errorf("replaced: judged %q, the record names %s", j.Version, v1)
	}
	if err := s.RecordJudged(ctx, "j", v1, "r1"); err != nil {
		t.Fatal(err)
	}
	if j := judged("recorded for the replaced version", "r1"); j.Version != "" {
		t.Errorf("recorded for the replaced version: judged %q", j.Version)
	}
}
