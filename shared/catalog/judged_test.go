package catalog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestJudged: Put records Discovery.SchemaRules on the head in the write
// that makes or confirms its version; Judged answers that version only for
// those rules and while it is current. An unchanged check recording no
// rules keeps the record; a flip recording none removes it.
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
	if res := catalogtest.MustPut(t, s, "j", judgedBy(catalogtest.Discover(a, time.Minute), "r1")); !res.Unchanged {
		t.Fatalf("Put = %+v, want unchanged", res)
	}
	j := judged("recorded by an unchanged check", "r1")
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

	catalogtest.MustPut(t, s, "j", catalogtest.Discover(a, 2*time.Minute)) // unchanged, no rules
	if j := judged("kept by a check recording none", "r1"); j.Version != v1 {
		t.Errorf("kept by a check recording none: judged %q, want %s", j.Version, v1)
	}

	b := a
	b.Tools = slices.Clone(a.Tools)
	b.Tools[2] = changed
	v2 := catalogtest.MustPut(t, s, "j", judgedBy(catalogtest.Discover(b, 3*time.Minute), "r2")).Version
	if j := judged("replaced, recorded by its flip", "r2"); j.Version != v2 || !j.Unchanged(changed) {
		t.Errorf("replaced, recorded by its flip: judged %q, want %s with the changed tool", j.Version, v2)
	}
	if j := judged("replaced, old rules", "r1"); j.Version != "" {
		t.Errorf("replaced, old rules: judged %q", j.Version)
	}
	c := catalogtest.Listing(4, "c")
	catalogtest.MustPut(t, s, "j", catalogtest.Discover(c, 4*time.Minute)) // a new version, no rules
	if j := judged("replaced by a flip recording none", "r2"); j.Version != "" {
		t.Errorf("replaced by a flip recording none: judged %q", j.Version)
	}
}

// judgedBy is d judged under rules.
func judgedBy(d catalog.Discovery, rules string) catalog.Discovery {
	d.SchemaRules = rules
	return d
}
