package main

import (
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// refuseQuarantined refuses a call to a tool the catalog holds
// quarantined, before any request to the server: a permanent
// wire.ToolNotPermitted naming the tool, why and what changed.
func refuseQuarantined(req Request, m catalog.Membership) error {
	if !m.Quarantined {
		return nil
	}
	name := req.ToolName
	if m.Name != "" {
		name = m.Name
	}
	return wire.Errorf(wire.ToolNotPermitted, nil, "tool %q of catalog %q (version %s) is quarantined until approved: %s", name, req.CatalogID, m.Version, quarantineWhy(m.QuarantineReason))
}

// quarantineWhy words a quarantine reason for the refusal.
func quarantineWhy(reason string) string {
	if reason == "new tool" {
		return "it is new since the catalog was last approved"
	}
	return "its definition changed since it was approved (" + reason + ")"
}
