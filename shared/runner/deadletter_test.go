package runner_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// TestDeadLetterError: a permanent DeadLetterError's attributes and body
// go with the dead-letter message beside the runner's own attributes; the
// processor sees the record's queue; a retryable one still comes back.
func TestDeadLetterError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantFailed bool
		wantSent   []runnertest.Message
	}{
		{
			name: "permanent: attributes and body replaced",
			err: &runner.DeadLetterError{Err: &wire.Error{Type: wire.ProtocolError, Message: "asks for input", Final: true},
				Attributes: map[string]string{"input_requests": `{"q":{}}`}, Body: `{"idempotency_key":"msg-0"}`},
			wantSent: []runnertest.Message{{QueueURL: dlqURL, Body: `{"idempotency_key":"msg-0"}`, Attributes: map[string]string{
				"mcpfn.error_type": "mcp_protocol_error", "mcpfn.error_message": "asks for input", "mcpfn.source_message_id": "msg-0",
				"mcpfn.input_requests": `{"q":{}}`}}},
		},
		{
			name: "permanent without a body: the record's",
			err:  &runner.DeadLetterError{Err: wire.Errorf(wire.InvalidRequest, nil, "bad"), Attributes: map[string]string{"note": ""}},
			wantSent: []runnertest.Message{{QueueURL: dlqURL, Body: `{}`, Attributes: map[string]string{
				"mcpfn.error_type": "invalid_request_error", "mcpfn.error_message": "bad", "mcpfn.source_message_id": "msg-0",
				"mcpfn.note": "-"}}},
		},
		{
			name:       "retryable: back to the queue, nothing sent",
			err:        &runner.DeadLetterError{Err: wire.Errorf(wire.ConnectionFailed, nil, "down"), Body: "x"},
			wantFailed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			queue := &runnertest.Queue{}
			var seen string
			r, err := runner.NewRunner(runner.Config{Function: "test", DLQURL: dlqURL, Queue: queue, Tasks: &runnertest.Tasks{},
				Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{}},
				runner.ProcessorFunc(func(_ context.Context, it *runner.Item) (any, error) {
					seen = it.Queue
					return nil, tt.err
				}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			out, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(`{}`)))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(failures(t, out)) == 1; got != tt.wantFailed {
				t.Errorf("failed = %t, want %t", got, tt.wantFailed)
			}
			if diff := cmp.Diff(tt.wantSent, queue.Sent()); diff != "" {
				t.Errorf("dead letters (-want +got):\n%s", diff)
			}
			if want := runnertest.SQSEvent("").Records[0].EventSourceARN; seen != want {
				t.Errorf("Item.Queue = %q, want %q", seen, want)
			}
		})
	}
}
