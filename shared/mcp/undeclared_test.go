package mcp

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// taskShaped rewrites a tools/call result into a task answer.
func taskShaped(method string, r map[string]any) {
	if method != "tools/call" {
		return
	}
	clear(r)
	r["resultType"] = "task"
	r["task"] = map[string]any{"taskId": "t-1", "status": "working", "createdAt": "2026-12-06T00:00:00Z", "pollIntervalMs": 1000}
}

// TestUndeclaredTaskAnswer: a task answer to a tools/call that declared no
// Tasks extension (a legacy-era Conn, or CallTool on a modern one) is
// ErrUndeclaredTask, which is a protocol error and no answer a tool_result
// could be made of; the go-sdk alone would read it as an empty result.
func TestUndeclaredTaskAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool // stateless: the 2026-07-28 era; else a legacy one
		task      bool // through CallToolTask
	}{
		{name: "legacy era, CallTool"},
		{name: "legacy era, CallToolTask", task: true},
		{name: "modern era, CallTool", stateless: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.NewServer(t, mcptest.Options{Stateless: tc.stateless, Tasks: &mcptest.Tasks{Rewrite: taskShaped}})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
			ctx := testCtx(t, 10*time.Second)
			var err error
			if tc.task {
				_, err = c.CallToolTask(ctx, mcptest.ToolAskTwice, nil, nil)
			} else {
				_, err = c.CallTool(ctx, mcptest.ToolAskTwice, nil)
			}
			if !errors.Is(err, ErrUndeclaredTask) || !errors.Is(err, ErrProtocol) || errors.Is(err, ErrServerAnswered) {
				t.Errorf("err = %v, want ErrUndeclaredTask (ErrProtocol, not ErrServerAnswered)", err)
			}
			if n := count(s.Methods(), "tools/call"); n != 1 {
				t.Errorf("tools/call sent %d times, want 1", n)
			}
		})
	}
}
