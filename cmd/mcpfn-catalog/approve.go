package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// approveBy is who approves when --by is not given.
const approveBy = "mcpfn-catalog"

// runApprove approves the current definitions of quarantined tools (a
// table store only): one conditional write of the catalog's head, then
// one audit entry per approved tool when an audit table is configured.
// The ID may come first, before the flags, or after them.
func runApprove(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("approve", stdout)
	var sf storeFlags
	sf.register(fs.FlagSet)
	var tools names
	fs.Var(&tools, "tool", "a quarantined tool to approve (repeatable)")
	all := fs.Bool("all", false, "approve every quarantined tool")
	by := fs.String("by", approveBy, "who approves, as the audit trail records it")
	auditTable := fs.String("audit-table", "", "DynamoDB audit table (default $"+startup.EnvAuditTable+")")
	id, err := parseAround(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *all == (len(tools) > 0):
		return usagef("give --tool NAME (repeatable) or --all, one of them")
	case *by == "":
		return usagef("--by: want who approves")
	}
	if *auditTable == "" {
		*auditTable = getenv(startup.EnvAuditTable)
	}
	ctx, s, cancel, err := openBounded(ctx, sf, getenv)
	if err != nil {
		return err
	}
	defer cancel()
	if s.api == nil {
		return usagef("approvals are kept in the catalog table: give --table (or set %s)", startup.EnvCatalogTable)
	}
	ap, err := catalog.NewDynamo(s.api, s.table).Approve(ctx, id, tools, *all)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return failf("catalog %q not found", id)
	case err != nil:
		return s.fail(ctx, err)
	}
	approved := ap.Tools
	if approved == nil {
		approved = []catalog.Quarantined{}
	}
	audited := 0
	if *auditTable == "" {
		fmt.Fprintf(stderr, "mcpfn-catalog: approve: no audit table (--audit-table or %s): %d approvals not audited\n", startup.EnvAuditTable, len(approved))
	} else {
		as := audit.New(s.api, *auditTable)
		for _, q := range approved {
			e := audit.Entry{CatalogID: id, Version: ap.Version, Tool: q.Name, Decision: audit.Approve, Rule: q.Reason, By: *by}
			if _, err := as.Append(ctx, e); err != nil {
				return storeErrorf("approved %d tools, audited %d: %s", len(approved), audited, oneLine(err))
			}
			audited++
		}
	}
	if len(tools) > len(approved) {
		fmt.Fprintf(stderr, "mcpfn-catalog: approve: %d of the named tools were not quarantined\n", len(tools)-len(approved))
	}
	return writeJSON(stdout, map[string]any{"catalog_id": id, "version": ap.Version, "approved": approved, "audited": audited})
}

// parseAround parses fs from args and returns the one ID, which may come
// before the flags, after them, or between them.
func parseAround(fs *flagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if rest := fs.Args(); len(rest) > 1 && !strings.HasPrefix(rest[1], "-") {
		return "", usagef("want one catalog ID, got %q", rest)
	} else if len(rest) > 1 {
		return parse(fs, append(rest[1:], rest[0]))
	}
	return parse(fs, fs.Args())
}

// names is a repeatable flag of tool names.
type names []string

func (n *names) String() string { return strings.Join(*n, ",") }

func (n *names) Set(v string) error {
	if v == "" {
		return errors.New("empty tool name")
	}
	*n = append(*n, v)
	return nil
}

// callable is c's tools without the quarantined ones, and how many it
// left out.
func callable(c *catalog.Catalog) ([]mcp.Tool, int) {
	if len(c.Quarantined) == 0 {
		return c.Tools, 0
	}
	q := make(map[string]bool, len(c.Quarantined))
	for _, t := range c.Quarantined {
		q[t.Name] = true
	}
	out := make([]mcp.Tool, 0, len(c.Tools))
	for _, t := range c.Tools {
		if !q[t.Name] {
			out = append(out, t)
		}
	}
	return out, len(c.Tools) - len(out)
}
