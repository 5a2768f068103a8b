package main

import (
	"encoding/json"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/schema"
)

// TestSchemaVerdictsFollowTheChange: a schema shared by many tools is
// checked once, and a re-discovery of an unchanged listing, or of another
// catalog listing the same schemas, checks none on a warm instance.
func TestSchemaVerdictsFollowTheChange(t *testing.T) {
	shared := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	own := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	bad := json.RawMessage(`{"type":"object","properties":{"a":{"type":"strng"}}}`)
	e := newEnv(t)
	e.handler.Schemas = schema.NewCache(0)
	e.server.listing = mcp.Listing{Tools: []mcp.Tool{
		{Name: "a", InputSchema: shared},
		{Name: "b", InputSchema: shared, OutputSchema: shared},
		{Name: "c", InputSchema: shared},
		{Name: "d", InputSchema: own},
		{Name: "e", InputSchema: bad},
	}}
	for i, id := range []string{"first", "first", "second"} {
		got := e.Invoke(t, request(map[string]any{"catalog_id": id}))
		if got.Error != nil {
			t.Fatalf("discovery %d: %+v", i, got.Error)
		}
		puts := e.store.puts[id]
		if l := puts[len(puts)-1].Listing; len(l.Tools) != 4 || len(l.Refused) != 1 || l.Refused[0].Name != "e" {
			t.Errorf("discovery %d stored %d tools and refused %+v; want 4 and e", i, len(l.Tools), l.Refused)
		}
	}
	if got := e.handler.Schemas.Stats(); got.Checks != 3 {
		t.Errorf("three discoveries of 3 distinct schemas checked %d (%+v), want 3", got.Checks, got)
	}
}
