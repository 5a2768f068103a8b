package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// fakeTaskConn is fakeConn for a server that speaks tasks: a poll finds the
// task still working, an update and a cancel are accepted, and a tools/call
// with input responses completes. Every request is recorded in the
// server's calls.
type fakeTaskConn struct{ fakeConn }

func (c fakeTaskConn) record(call string) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.calls = append(c.s.calls, call)
}

func (c fakeTaskConn) CallToolTask(ctx context.Context, name string, args json.RawMessage, resume *mcp.Resume) (*mcp.Answer, error) {
	if resume == nil {
		res, err := c.CallTool(ctx, name, args)
		return &mcp.Answer{Result: res}, err
	}
	c.record(name + " " + string(args) + " inputResponses=" + string(resume.InputResponses) + " requestState=" + resume.RequestState)
	return &mcp.Answer{Result: &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: name + " answered after the input round"}}}}, nil
}

func (c fakeTaskConn) GetTask(_ context.Context, id string) (*mcp.Answer, error) {
	c.record("tasks/get " + id)
	return &mcp.Answer{Pending: &mcp.Pending{TaskID: id, Status: mcp.StatusWorking, PollInterval: 30 * time.Second, StatusMessage: "building: 3 of 7 steps"}}, nil
}

func (c fakeTaskConn) UpdateTask(_ context.Context, id string, responses json.RawMessage) error {
	c.record("tasks/update " + id + " " + string(responses))
	return nil
}

func (c fakeTaskConn) CancelTask(_ context.Context, id string) error {
	c.record("tasks/cancel " + id)
	return nil
}

// pendingSamples is the ledger state each continuation sample in events/
// finds under its key: what an earlier invocation of the same call left.
var pendingSamples = map[string]ledger.Pending{
	"call-pending-poll": {TaskID: "task-7f3a", Version: "2026-07-28", PollAfter: 30,
		Answer: json.RawMessage(`{"type":"mcp_call_pending","status":"working","poll_after_seconds":30}`)},
	"call-cancel": {TaskID: "task-7f3b", Version: "2026-07-28", PollAfter: 30,
		Answer: json.RawMessage(`{"type":"mcp_call_pending","status":"working","poll_after_seconds":30}`)},
	"call-input-responses": {Version: "2026-07-28", PollAfter: 15, RequestState: "rs-opaque-1", OpenInputs: []string{"confirm"},
		Answer: json.RawMessage(`{"type":"mcp_call_pending","status":"input_required","poll_after_seconds":15,"input_requests":{"confirm":{"method":"elicitation/create","params":{"message":"Multiply 6 by 7?"}}}}`)},
}

// seedPending gives a continuation sample (named by the running subtest)
// its pending call, and the server tasks.
func seedPending(t *testing.T, e *env, payload []byte) {
	t.Helper()
	p, ok := pendingSamples[t.Name()[strings.LastIndex(t.Name(), "/")+1:]]
	if !ok {
		return
	}
	var req Request
	if err := json.Unmarshal(payload, &req); err != nil {
		t.Fatal(err)
	}
	p.Tool, p.ArgsDigest = req.ToolName, argsDigest(req.arguments())
	if _, err := e.ledger.Begin(t.Context(), req.IdempotencyKey); err != nil {
		t.Fatal(err)
	}
	if err := e.ledger.Suspend(t.Context(), req.IdempotencyKey, p); err != nil {
		t.Fatal(err)
	}
	e.server.Conn = fakeTaskConn{fakeConn{e.server}}
}
