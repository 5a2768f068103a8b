package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/schema"
)

// TestStoredVerdictsOverDynamo: over the real store (moto), a fresh
// schema.Cache re-discovering an unchanged listing checks only the refused
// tool's schema; one changed tool adds exactly its schema; a head recording
// other rules (written by an unchanged check, as a version's are by its
// flip) has every schema checked again.
func TestStoredVerdictsOverDynamo(t *testing.T) {
	s := newStack(t)
	server := sdk.NewServer(&sdk.Implementation{Name: "judged", Version: "1"}, &sdk.ServerOptions{})
	noop := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	const tools = 20
	for i := range tools {
		server.AddTool(&sdk.Tool{Name: fmt.Sprintf("tool_%d", i),
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"p%d":{"type":"string"}}}`, i))}, noop)
	}
	server.AddTool(&sdk.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strng"}}}`)}, noop)
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	req := []byte(body(map[string]any{"catalog_id": "judged", "server_url": srv.URL}))

	discover := func(step string, wantChecks int64, wantUnchanged bool) *Result {
		t.Helper()
		s.handler.Schemas = schema.NewCache(0) // a cold instance
		out, err := s.invoke(t, req)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		res := out.(*Result)
		if res.ToolCount != tools || len(res.Refused) != 1 || res.Unchanged != wantUnchanged {
			t.Errorf("%s: %d tools, refused %+v, unchanged %t; want %d, bad, %t", step, res.ToolCount, res.Refused, res.Unchanged, tools, wantUnchanged)
		}
		if got := s.handler.Schemas.Stats().Checks; got != wantChecks {
			t.Errorf("%s: checked %d schemas, want %d", step, got, wantChecks)
		}
		return res
	}
	discover("first", tools+1, false)
	discover("unchanged", 1, true) // bad was refused, so it is not stored as judged
	server.AddTool(&sdk.Tool{Name: "tool_7", InputSchema: json.RawMessage(`{"type":"object","properties":{"changed":{"type":"integer"}}}`)}, noop)
	discover("one changed", 2, false)
	discover("unchanged after the change", 1, true)
	s.handler.Store = olderRules{s.Store} // as a release with other rules would record
	discover("recorded by other rules", 1, true)
	s.handler.Store = s.Store
	discover("other rules recorded", tools+1, true)
	discover("rules recorded again", 1, true)
}

// olderRules is the store as a release judging by other rules uses it:
// its unchanged check records those rules.
type olderRules struct{ *catalog.Dynamo }

func (o olderRules) Put(ctx context.Context, id string, d catalog.Discovery) (catalog.PutResult, error) {
	d.SchemaRules = "0/older"
	return o.Dynamo.Put(ctx, id, d)
}
