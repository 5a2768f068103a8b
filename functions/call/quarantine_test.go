package main

import (
	"context"
	"testing"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// quarantinedCatalog reports the tool named in reasons quarantined.
type quarantinedCatalog struct {
	*fakeCatalog
	reasons map[string]string
}

func (c quarantinedCatalog) Lookup(ctx context.Context, id, tool string) (catalog.Membership, error) {
	m, err := c.fakeCatalog.Lookup(ctx, id, tool)
	if r, ok := c.reasons[tool]; ok && m.Found {
		m.Quarantined, m.QuarantineReason = true, r
	}
	return m, err
}

func TestQuarantinedToolIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, reason, want string
	}{
		{"changed", "description, input schema", `tool "calculate" of catalog "example" (version example-v1) is quarantined until approved: its definition changed since it was approved (description, input schema)`},
		{"new", "new tool", `tool "calculate" of catalog "example" (version example-v1) is quarantined until approved: it is new since the catalog was last approved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.handler.Catalog = quarantinedCatalog{e.catalog, map[string]string{"calculate": tc.reason}}
			got := e.direct(t, request(map[string]any{"catalog_id": "example"}))
			if got.Error == nil || got.Error.Type != "mcp_tool_not_permitted_error" || got.Error.Message != tc.want {
				t.Errorf("error = %+v, want mcp_tool_not_permitted_error %q", got.Error, tc.want)
			}
			if len(e.server.calls) != 0 {
				t.Errorf("the server saw %v, want no request", e.server.calls)
			}
			// From SQS the refusal is permanent: dead-lettered, not retried.
			sqs := e.direct(t, runnertest.Payload(runnertest.SQSEvent(string(request(map[string]any{"catalog_id": "example"})))))
			if len(sqs.DeadLetters) != 1 || string(sqs.Result) != `{"batchItemFailures":[]}` {
				t.Errorf("from SQS: result %s, dead letters %v; want one dead letter", sqs.Result, sqs.DeadLetters)
			}
			// Another tool of the catalog is still callable.
			if ok := e.direct(t, request(map[string]any{"catalog_id": "example", "tool_name": "current_time", "arguments": map[string]any{}})); ok.Error != nil {
				t.Errorf("current_time: %+v", ok.Error)
			}
		})
	}
}
