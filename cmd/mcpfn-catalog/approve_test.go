package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/policy"
)

// TestApproveCommand: tools leaves a quarantined tool out and says so on
// stderr; approve makes it listed again and audits it; without an audit
// table approve still works and says nothing was audited. It sets the
// environment, so it does not run in parallel.
func TestApproveCommand(t *testing.T) {
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	_, auditTable := awstest.NewTable(t, m, "audit", audit.CreateTable)
	setMotoEnv(t)
	s := catalog.NewDynamo(client, table)
	put := func(l mcp.Listing, i int) {
		d := catalogtest.Discover(l, time.Duration(i)*time.Minute)
		d.OnChange, d.Define = catalog.OnChangeQuarantine, policy.Parts
		catalogtest.MustPut(t, s, "main", d)
	}
	l := catalogtest.Listing(5, "a")
	put(l, 0)
	l.Tools[2].Description = "changed"
	l.Tools = append(l.Tools, catalogtest.Tool("fresh", "a"))
	put(l, 1)
	store := []string{"--table", table, "--endpoint", m.Endpoint()}

	listed := func() ([]string, string) {
		code, out, stderr := cmd(t, nil, append(append([]string{"tools"}, store...), "main")...)
		if code != exitOK {
			t.Fatalf("tools: exit %d, %s", code, stderr)
		}
		var tools []struct{ Name string }
		decode(t, []byte(out), &tools)
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Name)
		}
		return names, stderr
	}
	names, stderr := listed()
	if slices.Contains(names, "tool-2") || slices.Contains(names, "fresh") || len(names) != 4 || !strings.Contains(stderr, "left out 2 quarantined tools") {
		t.Errorf("tools = %v, stderr %q; want tool-2 and fresh left out, and said", names, stderr)
	}

	var got struct {
		OnChange    string `json:"on_change"`
		Quarantined []catalog.Quarantined
		Tools       []struct{ Name string }
	}
	decode(t, mustRun(t, append(append([]string{"get"}, store...), "main")...), &got)
	if got.OnChange != "quarantine" || len(got.Quarantined) != 2 || len(got.Tools) != 6 {
		t.Errorf("get: on_change %q, quarantined %v, %d tools; want quarantine, 2 of 6", got.OnChange, got.Quarantined, len(got.Tools))
	}

	var res struct {
		Approved []catalog.Quarantined
		Audited  int
	}
	code, out, stderr := cmd(t, nil, append([]string{"approve", "main", "--tool", "tool-2", "--by", "alice", "--audit-table", auditTable}, store...)...)
	if code != exitOK {
		t.Fatalf("approve: exit %d, %s", code, stderr)
	}
	decode(t, []byte(out), &res)
	if len(res.Approved) != 1 || res.Approved[0] != (catalog.Quarantined{Name: "tool-2", Reason: "description"}) || res.Audited != 1 {
		t.Errorf("approve printed %s", out)
	}
	entries, err := audit.New(client, auditTable).List(t.Context(), "main")
	if err != nil || len(entries) != 1 || entries[0].Tool != "tool-2" || entries[0].Decision != audit.Approve || entries[0].By != "alice" || entries[0].Version == "" {
		t.Errorf("audit entries %+v, %v; want one approve of tool-2 by alice", entries, err)
	}
	if names, _ := listed(); !slices.Contains(names, "tool-2") || slices.Contains(names, "fresh") {
		t.Errorf("tools after approving tool-2 = %v", names)
	}

	code, _, stderr = cmd(t, nil, append(append([]string{"approve"}, store...), "--all", "main")...)
	if code != exitOK || !strings.Contains(stderr, "not audited") {
		t.Errorf("approve --all without an audit table: exit %d, %q", code, stderr)
	}
	if names, stderr := listed(); len(names) != 6 || stderr != "" {
		t.Errorf("tools after approving all = %v, %q", names, stderr)
	}
	for _, args := range [][]string{
		{"approve", "main"},
		{"approve", "--all", "--tool", "x", "main"},
		{"approve", "--dir", t.TempDir(), "--all", "main"},
	} {
		if code, _, _ := cmd(t, nil, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want usage", args, code)
		}
	}
}
