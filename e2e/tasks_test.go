package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// taskServer serves the mcptest Tasks-extension fixture (2026-07-28) on
// loopback and returns its endpoint and counters.
func taskServer(t *testing.T, tasks *mcptest.Tasks) (string, *mcptest.Counters) {
	t.Helper()
	h, counters := mcptest.NewHandler(mcptest.Options{Stateless: true, Tasks: tasks})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", counters
}

func countMethod(c *mcptest.Counters, method string) int {
	n := 0
	for _, m := range c.Methods() {
		if m == method {
			n++
		}
	}
	return n
}

// TestTaskCallThroughTheBootstrap: through the real call bootstrap under
// the RIE and a DynamoDB ledger (moto), a task that completes on its third
// poll answers mcp_call_pending (poll_after_seconds at the floor) until it
// completes, costing one tools/call and three tasks/get, and its
// tool_result is byte-identical to the same tool answering synchronously.
// A tool answering input_required directly runs one tools/call per round;
// a cancel sends one tasks/cancel and records an is_error result.
func TestTaskCallThroughTheBootstrap(t *testing.T) {
	url, counters := taskServer(t, &mcptest.Tasks{Polls: 2, PollIntervalMs: 2000})
	legacyURL := legacyTaskServer(t)
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url), allowOnly(t, legacyURL)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=5"}})

	req := mustJSON(t, map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "e2e-task-1"})
	var final string
	for i := range 4 {
		res := invoke(t, s.call, req)
		if res.ErrorType != "" {
			t.Fatalf("invocation %d: %s %s", i+1, res.ErrorType, res.ErrorMessage)
		}
		if i < 3 && !strings.Contains(string(res.Payload), `"type":"mcp_call_pending","status":"working","poll_after_seconds":5`) {
			t.Fatalf("invocation %d = %s, want pending working, poll_after_seconds 5", i+1, res.Payload)
		}
		final = string(res.Payload)
	}
	if countMethod(counters, "tools/call") != 1 || countMethod(counters, "tasks/get") != 3 {
		t.Errorf("methods %v, want 1 tools/call and 3 tasks/get", counters.Methods())
	}
	sync := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": legacyURL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "e2e-sync-1"}))
	if string(sync.Payload) != final {
		t.Errorf("task result %s\nsynchronous %s\nwant byte-identical", final, sync.Payload)
	}

	ask := map[string]any{"server_url": url, "tool_name": mcptest.ToolAskTwice, "idempotency_key": "e2e-ask-1"}
	res := invoke(t, s.call, mustJSON(t, ask))
	if !strings.Contains(string(res.Payload), `"status":"input_required"`) {
		t.Fatalf("round 1 = %s %s", res.Payload, res.ErrorMessage)
	}
	for _, k := range []string{"q1", "q2"} {
		ask["input_responses"] = map[string]any{k: map[string]any{"action": "accept", "content": map[string]string{"name": k}}}
		res = invoke(t, s.call, mustJSON(t, ask))
	}
	if !strings.Contains(string(res.Payload), "answers: q1, q2") {
		t.Errorf("final = %s %s, want the tool result", res.Payload, res.ErrorMessage)
	}
	if n := countMethod(counters, "tools/call"); n != 4 {
		t.Errorf("tools/call sent %d times in all, want 4 (1 task, 3 rounds)", n)
	}

	forever := map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskForever, "idempotency_key": "e2e-cancel-1"}
	invoke(t, s.call, mustJSON(t, forever))
	forever["cancel"] = true
	res = invoke(t, s.call, mustJSON(t, forever))
	if !strings.Contains(string(res.Payload), `"is_error":true`) || countMethod(counters, "tasks/cancel") != 1 {
		t.Errorf("cancel = %s %s (tasks/cancel %d), want an is_error result and one tasks/cancel", res.Payload, res.ErrorMessage, countMethod(counters, "tasks/cancel"))
	}
}

// legacyTaskServer serves the same fixture statefully (a legacy
// era, where task_sleep answers synchronously).
func legacyTaskServer(t *testing.T) string {
	t.Helper()
	h, _ := mcptest.NewHandler(mcptest.Options{Tasks: &mcptest.Tasks{}})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}
