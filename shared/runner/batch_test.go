package runner_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestBatchMixed is the batch contract: exactly the retryable records come
// back, permanent ones go to the DLQ, task tokens get their outcome.
func TestBatchMixed(t *testing.T) {
	f := newFixture(t, runner.Config{DLQURL: dlqURL})
	ev := runnertest.SQSEvent(
		body("ok"), // msg-0
		body("invalid_request_error"),
		body("mcp_egress_denied_error"),
		body("mcp_authentication_failed_error"),
		body("mcp_connection_failed_error"), // msg-4
		body("mcp_protocol_error"),          // msg-5
		body("internal_error"),              // msg-6
		`not json at all`,
		body("mcp_connection_failed_error", "task_token", "tok-8"),
		body("ok", "task_token", "tok-9"),
	)
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	out, err := f.runner.Handle(ctx, runnertest.Payload(ev))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"msg-4", "msg-5", "msg-6"}, failures(t, out)); diff != "" {
		t.Errorf("batch item failures (-want +got):\n%s", diff)
	}
	var dead []string
	for _, m := range f.queue.Sent() {
		if m.QueueURL != dlqURL {
			t.Errorf("sent to %s, want %s", m.QueueURL, dlqURL)
		}
		dead = append(dead, m.Attributes["mcpfn.source_message_id"]+" "+m.Attributes["mcpfn.error_type"])
	}
	slices.Sort(dead)
	wantDead := []string{
		"msg-1 invalid_request_error",
		"msg-2 mcp_egress_denied_error",
		"msg-3 mcp_authentication_failed_error",
		"msg-7 invalid_request_error",
	}
	if diff := cmp.Diff(wantDead, dead); diff != "" {
		t.Errorf("dead-lettered (-want +got):\n%s", diff)
	}
	wantReports := []runnertest.TaskReport{
		{TaskToken: "tok-8", Error: "mcp_connection_failed_error", Cause: "mcp_connection_failed_error happened: cause mentions https://mcp.example.com and [redacted]"},
		{TaskToken: "tok-9", Output: json.RawMessage(`{"item":"msg-9"}`)},
	}
	if diff := cmp.Diff(wantReports, f.tasks.Reports()); diff != "" {
		t.Errorf("task reports (-want +got):\n%s", diff)
	}
	outcomes := map[string]string{}
	for _, s := range f.logs.Summaries() {
		outcomes[s["work_item"].(string)] = s["outcome"].(string) + " " + s["error_type"].(string)
	}
	wantOutcomes := map[string]string{
		"msg-0": "succeeded ",
		"msg-1": "dead_lettered invalid_request_error",
		"msg-2": "dead_lettered mcp_egress_denied_error",
		"msg-3": "dead_lettered mcp_authentication_failed_error",
		"msg-4": "requeued mcp_connection_failed_error",
		"msg-5": "requeued mcp_protocol_error",
		"msg-6": "requeued internal_error",
		"msg-7": "dead_lettered invalid_request_error",
		"msg-8": "task_failed mcp_connection_failed_error",
		"msg-9": "task_succeeded ",
	}
	if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
		t.Errorf("summary outcomes (-want +got):\n%s", diff)
	}
}

func TestBatchReportingFailures(t *testing.T) {
	tests := []struct {
		name        string
		dlq         string
		queueFail   error
		tasksFail   error
		body        string
		wantFailed  bool
		wantOutcome string
		wantReports int
	}{
		{name: "no DLQ configured: permanent goes back for the redrive policy", body: body("invalid_request_error"), wantFailed: true, wantOutcome: "requeued"},
		{name: "DLQ send fails", dlq: dlqURL, queueFail: errors.New("access denied"), body: body("invalid_request_error"), wantFailed: true, wantOutcome: "dead_letter_failed"},
		{name: "SendTaskSuccess fails", body: body("ok", "task_token", "t"), tasksFail: errors.New("throttled"), wantFailed: true, wantOutcome: "report_failed"},
		{name: "SendTaskFailure fails", body: body("invalid_request_error", "task_token", "t"), tasksFail: errors.New("throttled"), wantFailed: true, wantOutcome: "report_failed"},
		{name: "a final retryable error goes to the DLQ", dlq: dlqURL, body: body("final"), wantOutcome: "dead_lettered"},
		{name: "permanent with token fails the task, not the DLQ", dlq: dlqURL, queueFail: errors.New("unused"), body: body("invalid_request_error", "task_token", "t"), wantOutcome: "task_failed", wantReports: 1},
		{name: "SendTaskSuccess: the task timed out", body: body("ok", "task_token", "t"), tasksFail: &sfntypes.TaskTimedOut{}, wantOutcome: "task_closed"},
		{name: "SendTaskFailure: the task does not exist", body: body("internal_error", "task_token", "t"), tasksFail: &sfntypes.TaskDoesNotExist{}, wantOutcome: "task_closed"},
		{name: "SendTaskSuccess: invalid token", body: body("ok", "task_token", "t"), tasksFail: fmt.Errorf("operation error SFN: SendTaskSuccess: %w", &sfntypes.InvalidToken{}), wantOutcome: "task_closed"},
		{name: "a duplicate in progress with a token goes back unreported", dlq: dlqURL, body: body("in_progress", "task_token", "t"), wantFailed: true, wantOutcome: "requeued"},
		{name: "a duplicate in progress without a token goes back", dlq: dlqURL, body: body("in_progress"), wantFailed: true, wantOutcome: "requeued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, runner.Config{DLQURL: tt.dlq})
			f.queue.Fail = tt.queueFail
			f.tasks.Fail = tt.tasksFail
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(failures(t, out)) == 1; got != tt.wantFailed {
				t.Errorf("failed = %t, want %t", got, tt.wantFailed)
			}
			sums := f.logs.Summaries()
			if len(sums) != 1 || sums[0]["outcome"] != tt.wantOutcome {
				t.Errorf("summaries = %v, want outcome %q", sums, tt.wantOutcome)
			}
			if got := len(f.tasks.Reports()); got != tt.wantReports {
				t.Errorf("%d task reports, want %d", got, tt.wantReports)
			}
			wantDead := 0
			if tt.wantOutcome == "dead_lettered" {
				wantDead = 1
			}
			if n := len(f.queue.Sent()); n != wantDead {
				t.Errorf("%d dead letters, want %d", n, wantDead)
			}
		})
	}
}

// TestBatchDeadlineTooShort: two at a time, 4.4 s each, 10 s to the deadline
// and a 1 s reserve: the second pair has 4.6 s, and the third pair comes at
// 8.8 s with 0.2 s left. (At 4.5 s the second pair's sleep and its budget
// ended at the same instant, and select chose between them at random.)
func TestBatchDeadlineTooShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Concurrency: 2, Reserve: time.Second, MinBudget: time.Second})
		var bodies []string
		for range 6 {
			bodies = append(bodies, body("ok", "sleep", "4.4s"))
		}
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 10*time.Second)
		defer cancel()
		out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"msg-4", "msg-5"}, failures(t, out)); diff != "" {
			t.Errorf("batch item failures (-want +got):\n%s", diff)
		}
		if got := f.started.Load(); got != 4 {
			t.Errorf("processor ran %d items, want 4", got)
		}
		for _, s := range f.logs.Summaries() {
			want := "succeeded"
			if s["work_item"] == "msg-4" || s["work_item"] == "msg-5" {
				want = "not_started"
			}
			if s["outcome"] != want {
				t.Errorf("%s: outcome %v, want %s", s["work_item"], s["outcome"], want)
			}
		}
	})
}

func TestBatchConcurrencyLimit(t *testing.T) {
	for _, limit := range []int{1, 3, 10} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, runner.Config{Concurrency: limit})
				var bodies []string
				for range 10 {
					bodies = append(bodies, body("ok", "sleep", "1s"))
				}
				ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Hour)
				defer cancel()
				start := time.Now()
				out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...)))
				if err != nil || len(failures(t, out)) != 0 {
					t.Fatalf("Handle = %v, %v", out, err)
				}
				if got := f.peak.Load(); got != int32(limit) {
					t.Errorf("peak concurrency %d, want %d", got, limit)
				}
				// Ten one-second items in ceil(10/limit) waves.
				if got, want := time.Since(start), time.Duration((10+limit-1)/limit)*time.Second; got != want {
					t.Errorf("batch took %s, want %s", got, want)
				}
			})
		})
	}
}
