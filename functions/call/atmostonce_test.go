package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestAtMostOnce: the ledger keeps a tool from running twice for one tool
// use, and frees the key when nothing ran.
func TestAtMostOnce(t *testing.T) {
	t.Run("a duplicate delivery replays the result", func(t *testing.T) {
		e := newEnv(t)
		first := e.direct(t, request(map[string]any{"tool_use_id": "toolu_dup"}))
		second := e.direct(t, request(map[string]any{"tool_use_id": "toolu_dup"}))
		if len(e.server.calls) != 1 {
			t.Errorf("tool ran %d times, want 1", len(e.server.calls))
		}
		if first.Error != nil || string(first.Result) != string(second.Result) {
			t.Errorf("second result %s, want the first %s (error %+v)", second.Result, first.Result, first.Error)
		}
		if second.Summaries[0]["replayed"] != true {
			t.Errorf("summary = %v, want replayed", second.Summaries[0])
		}
	})
	t.Run("an SQS redelivery is keyed by message id without tool_use_id", func(t *testing.T) {
		e := newEnv(t)
		ev := runnertest.Payload(runnertest.SQSEvent(string(request(nil))))
		e.direct(t, ev)
		again := e.direct(t, ev)
		if len(e.server.calls) != 1 || again.Summaries[0]["idempotency_key"] != "message_id" {
			t.Errorf("tool ran %d times (want 1); summary %v", len(e.server.calls), again.Summaries[0])
		}
	})
	t.Run("a task token keys the call without tool_use_id", func(t *testing.T) {
		e := newEnv(t)
		payload := request(map[string]any{"task_token": "tok"})
		e.direct(t, payload)
		again := e.direct(t, payload)
		if len(e.server.calls) != 1 || again.Summaries[0]["idempotency_key"] != "task_token" {
			t.Errorf("tool ran %d times (want 1); summary %v", len(e.server.calls), again.Summaries[0])
		}
	})
	t.Run("a direct redelivery with the same idempotency_key replays", func(t *testing.T) {
		e := newEnv(t)
		payload := request(map[string]any{"idempotency_key": "arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:run-1"})
		first := e.direct(t, payload)
		again := e.direct(t, payload)
		if len(e.server.calls) != 1 {
			t.Errorf("tool ran %d times, want 1", len(e.server.calls))
		}
		if first.Error != nil || string(again.Result) != string(first.Result) {
			t.Errorf("again = %s (error %+v), want the first result %s", again.Result, again.Error, first.Result)
		}
		if s := again.Summaries[0]; s["idempotency_key"] != "idempotency_key" || s["replayed"] != true {
			t.Errorf("summary = %v, want replayed under idempotency_key", s)
		}
		other := e.direct(t, request(map[string]any{"idempotency_key": "arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:run-2"}))
		if other.Error != nil || len(e.server.calls) != 2 {
			t.Errorf("another key: error %+v, tool ran %d times; want it to run again", other.Error, len(e.server.calls))
		}
	})
	t.Run("a replayed failure under idempotency_key keeps its wire type", func(t *testing.T) {
		e := newEnv(t)
		e.server.callErr = fmt.Errorf("mcp: call: %w: connection reset", errors.New("read tcp"))
		payload := request(map[string]any{"idempotency_key": "exec-lost"})
		first := e.direct(t, payload)
		e.server.callErr = nil
		again := e.direct(t, payload)
		if first.Error == nil || first.Error.Type != "mcp_connection_failed_error" {
			t.Fatalf("first error = %+v", first.Error)
		}
		if again.Error == nil || again.Error.Type != first.Error.Type || again.Error.Message != first.Error.Message+" (outcome of an earlier delivery)" {
			t.Errorf("replayed error = %+v, want %s %q (outcome of an earlier delivery)", again.Error, first.Error.Type, first.Error.Message)
		}
		if len(e.server.calls) != 1 {
			t.Errorf("tool ran %d times, want 1", len(e.server.calls))
		}
	})
	t.Run("a direct call without key is not recorded", func(t *testing.T) {
		e := newEnv(t)
		e.direct(t, request(nil))
		e.direct(t, request(nil))
		if len(e.server.calls) != 2 {
			t.Errorf("tool ran %d times, want 2", len(e.server.calls))
		}
	})
	t.Run("a delivery in progress sends the duplicate back", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.ledger.Peer().Begin(t.Context(), "toolu_busy"); err != nil {
			t.Fatal(err)
		}
		got := e.direct(t, runnertest.Payload(runnertest.SQSEvent(string(request(map[string]any{"tool_use_id": "toolu_busy"})))))
		if string(got.Result) != `{"batchItemFailures":[{"itemIdentifier":"msg-0"}]}` || len(e.server.calls) != 0 {
			t.Errorf("result %s, calls %v; want the record back and no call", got.Result, e.server.calls)
		}
		if s := got.Summaries[0]; s["error_type"] != "internal_error" || s["outcome"] != "requeued" {
			t.Errorf("summary = %v", s)
		}
	})
	t.Run("a delivery in progress sends a duplicate with a task token back, unreported", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.ledger.Peer().Begin(t.Context(), "toolu_busy"); err != nil {
			t.Fatal(err)
		}
		body := string(request(map[string]any{"tool_use_id": "toolu_busy", "task_token": "tok-busy"}))
		got := e.direct(t, runnertest.Payload(runnertest.SQSEvent(body)))
		if string(got.Result) != `{"batchItemFailures":[{"itemIdentifier":"msg-0"}]}` || len(got.TaskReports) != 0 || len(e.server.calls) != 0 {
			t.Errorf("result %s, task reports %+v, calls %v; want the record back, no report and no call", got.Result, got.TaskReports, e.server.calls)
		}
		if s := got.Summaries[0]; s["error_type"] != "internal_error" || s["outcome"] != "requeued" {
			t.Errorf("summary = %v", s)
		}
		direct := e.direct(t, []byte(body))
		if direct.Error == nil || direct.Error.Type != "internal_error" || len(direct.TaskReports) != 0 {
			t.Errorf("direct: error %+v, task reports %+v; want internal_error and no report", direct.Error, direct.TaskReports)
		}
	})
	t.Run("a redelivery to a closed task is done", func(t *testing.T) {
		for _, name := range []string{"ok", "fail"} {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				e.Tasks.Once = true
				if name == "fail" {
					e.server.callErr = fmt.Errorf("mcp: call: %w", context.DeadlineExceeded)
				}
				ev := runnertest.Payload(runnertest.SQSEvent(string(request(map[string]any{"tool_use_id": "toolu_closed", "task_token": "tok-closed"}))))
				first := e.direct(t, ev)
				again := e.direct(t, ev)
				if len(first.TaskReports) != 1 || len(e.server.calls) != 1 {
					t.Fatalf("first: reports %+v, calls %v; want one each", first.TaskReports, e.server.calls)
				}
				if string(again.Result) != `{"batchItemFailures":[]}` || len(again.TaskReports) != 0 || len(again.DeadLetters) != 0 {
					t.Errorf("again: result %s, reports %+v, dead letters %+v; want the record done and nothing sent", again.Result, again.TaskReports, again.DeadLetters)
				}
				s := again.Summaries[0]
				if s["outcome"] != "task_closed" || s["task_report_error"] != "TaskTimedOut" || s["replayed"] != true || s["level"] != "WARN" {
					t.Errorf("summary = %v, want a replay ending task_closed (TaskTimedOut) at WARN", s)
				}
			})
		}
	})
	t.Run("a failure before the call frees the key", func(t *testing.T) {
		e := newEnv(t)
		e.server.Err = errors.New("connection refused")
		if got := e.direct(t, request(map[string]any{"tool_use_id": "toolu_retry"})); got.Error == nil || got.Error.Type != "mcp_connection_failed_error" {
			t.Fatalf("first attempt error = %+v", got.Error)
		}
		e.server.Err = nil
		if got := e.direct(t, request(map[string]any{"tool_use_id": "toolu_retry"})); got.Error != nil {
			t.Fatalf("retry error = %+v", got.Error)
		}
		if len(e.server.calls) != 1 {
			t.Errorf("tool ran %d times, want 1", len(e.server.calls))
		}
	})
	t.Run("a failure during the call is final", func(t *testing.T) {
		e := newEnv(t)
		e.server.callErr = fmt.Errorf("mcp: call: %w", context.DeadlineExceeded)
		first := e.direct(t, request(map[string]any{"tool_use_id": "toolu_maybe"}))
		e.server.callErr = nil
		body := string(request(map[string]any{"tool_use_id": "toolu_maybe"}))
		second := e.direct(t, runnertest.Payload(runnertest.SQSEvent(body)))
		if first.Error == nil || first.Error.Type != "mcp_connection_failed_error" {
			t.Fatalf("first error = %+v", first.Error)
		}
		if len(e.server.calls) != 1 {
			t.Errorf("tool ran %d times, want 1: it may have run the first time", len(e.server.calls))
		}
		// Replayed, the retryable type is final: dead-lettered, not requeued.
		if len(second.DeadLetters) != 1 || second.DeadLetters[0].Attributes["mcpfn.error_type"] != "mcp_connection_failed_error" {
			t.Errorf("dead letters = %+v, want the replayed failure", second.DeadLetters)
		}
	})
}

// tooBig is a ledger that refuses outcomes over limit bytes, as
// ledger.Dynamo refuses those over ledger.MaxOutcomeBytes.
type tooBig struct {
	*ledger.Memory
	limit int
}

func (l tooBig) Complete(ctx context.Context, key string, o ledger.Outcome) error {
	if len(o.Result) > l.limit {
		return fmt.Errorf("%w: %d bytes", ledger.ErrTooLarge, len(o.Result))
	}
	return l.Memory.Complete(ctx, key, o)
}

func TestResultTooLargeToReplay(t *testing.T) {
	e := newEnv(t)
	e.handler.Ledger = tooBig{e.ledger, 300}
	e.server.result = &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: strings.Repeat("x", 500)}}}
	first := e.direct(t, request(map[string]any{"tool_use_id": "toolu_big"}))
	second := e.direct(t, request(map[string]any{"tool_use_id": "toolu_big"}))
	if first.Error != nil || !strings.Contains(string(first.Result), strings.Repeat("x", 500)) {
		t.Fatalf("first = %s, %+v", first.Result, first.Error)
	}
	want := `{"type":"tool_result","tool_use_id":"toolu_big","is_error":false,"content":[{"type":"text","text":"[this tool call already ran and its result was delivered; at 603 bytes it is too large to deliver again]"}]}`
	if string(second.Result) != want || len(e.server.calls) != 1 {
		t.Errorf("replay = %s (calls %d), want %s", second.Result, len(e.server.calls), want)
	}
}
