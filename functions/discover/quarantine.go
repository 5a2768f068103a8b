package main

import (
	"context"
	"errors"
	"slices"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Auditor appends audit entries: the quarantine decisions of a discovery.
type Auditor interface {
	Append(ctx context.Context, e audit.Entry) (audit.Entry, error)
}

var _ Auditor = (*audit.Store)(nil)

// auditBy is the By of the entries discover writes.
const auditBy = "discover"

// validOnChange checks the request's on_change: "", accept or quarantine.
func validOnChange(mode string) error {
	if err := catalog.ValidateOnChange(mode); err != nil {
		return wire.Errorf(wire.InvalidRequest, err, "on_change")
	}
	return nil
}

// putError is the wire error of a failed Put.
func putError(err error) error {
	switch {
	case errors.Is(err, catalog.ErrInvalidID):
		return wire.Errorf(wire.InvalidRequest, err, "catalog_id")
	case errors.Is(err, catalog.ErrQuarantineUnsupported):
		return wire.Errorf(wire.InvalidRequest, err, "on_change")
	}
	return wire.Errorf(wire.Internal, err, "the catalog store failed")
}

// auditQuarantine writes one audit entry for each tool this discovery
// quarantined: those of put.Quarantined that it added or changed (a tool
// still quarantined from before is no new decision). A failed append is
// logged; the catalog is stored either way.
func (h *Handler) auditQuarantine(ctx context.Context, it *runner.Item, id string, put catalog.PutResult) {
	if h.Auditor == nil || put.Changes == nil {
		return
	}
	for _, q := range put.Quarantined {
		if !slices.Contains(put.Changes.Added, q.Name) && !slices.Contains(put.Changes.Changed, q.Name) {
			continue
		}
		e := audit.Entry{CatalogID: id, Version: put.Version, Tool: q.Name, Decision: audit.Quarantined, Rule: q.Reason, By: auditBy}
		if _, err := h.Auditor.Append(ctx, e); err != nil {
			h.logger().Warn("auditing a quarantine failed", "request_id", it.RequestID, "work_item", it.ID, "catalog_id", id, "tool", q.Name, "error", it.Scrub(err.Error()))
		}
	}
}
