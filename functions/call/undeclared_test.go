package main

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// TestLegacyEraTaskAnswer: a server that negotiated a version before
// 2026-07-28 and answers tools/call with a task is mcp_protocol_error,
// recorded as that failure: the same key replays it without a second
// tools/call, and no tool_result (let alone a success) is ever answered.
func TestLegacyEraTaskAnswer(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Tasks: &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
		if method == "tools/call" {
			clear(r)
			r["resultType"] = "task"
			r["task"] = map[string]any{"taskId": "legacy-1", "status": "working", "createdAt": "2026-12-06T00:00:00Z"}
		}
	}}}) // stateful: a legacy era
	req := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "idempotency_key": "legacy-task-1"}
	for i := range 2 {
		out, typ := invoke(t, s, req)
		if typ != "mcp_protocol_error" || out != "" {
			t.Errorf("invocation %d = %q, %q; want mcp_protocol_error and no output", i+1, out, typ)
		}
	}
	if n := methodCount(srv, "tools/call"); n != 1 {
		t.Errorf("tools/call sent %d times, want 1 (the failure is recorded and replayed)", n)
	}
}
