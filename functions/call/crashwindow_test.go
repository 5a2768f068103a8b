package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// killedBeforeSuspend is a ledger whose process dies between the server's
// task answer and the write that keeps it: Suspend never lands.
type killedBeforeSuspend struct{ *ledger.Dynamo }

func (killedBeforeSuspend) Suspend(context.Context, string, ledger.Pending) error {
	return errors.New("the process was killed before the write")
}

// TestCrashBeforeSuspend pins what DESIGN.md ("The crash window") says
// holds when a delivery dies after the task answer and before the ledger
// write: while its lease lasts, a continuation from another instance
// answers pending working and sends nothing; after the lease, the next one
// takes the key over and sends a second tools/call, since the task id was
// only in the lost answer (the window the protocol cannot close).
func TestCrashBeforeSuspend(t *testing.T) {
	s := newStack(t, nil)
	const lease = 3 * time.Second
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 100}})
	req := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "crash-1"}

	s.handler.Ledger = killedBeforeSuspend{ledger.NewDynamo(localstack.NewStrict(s.DDB), s.calls, lease)}
	if out, typ := invoke(t, s, req); typ != "" || !strings.Contains(out, `"status":"working"`) {
		t.Fatalf("first delivery = %s %s, want the task's pending answer", out, typ)
	}
	// Another instance: a ledger value holding no lease.
	s.handler.Ledger = ledger.NewDynamo(localstack.NewStrict(s.DDB), s.calls, lease)
	out, typ := invoke(t, s, req)
	if typ != "" || !strings.Contains(out, "another delivery of this call is still running") {
		t.Fatalf("continuation within the lease = %s %s, want pending working (running elsewhere)", out, typ)
	}
	if n := len(srv.Methods()); methodCount(srv, "tools/call") != 1 || methodCount(srv, "tasks/get") != 0 {
		t.Fatalf("within the lease: %d requests %v, want only the first tools/call", n, srv.Methods())
	}
	deadline := time.Now().Add(30 * time.Second) // a generous bound on the 3 s lease
	for strings.Contains(out, "another delivery of this call is still running") && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		out, typ = invoke(t, s, req)
	}
	if typ != "" || !strings.Contains(out, `"status":"working"`) {
		t.Fatalf("after the lease = %s %s, want a new task's pending answer", out, typ)
	}
	if got := methodCount(srv, "tools/call"); got != 2 || methodCount(srv, "tasks/get") != 0 {
		t.Errorf("after the lease: tools/call %d, tasks/get %d; want 2 and 0 (the lost task cannot be found)", got, methodCount(srv, "tasks/get"))
	}
}
