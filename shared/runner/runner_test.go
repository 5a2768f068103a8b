package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

const dlqURL = "http://127.0.0.1:1/000000000000/mcpfn-test-dlq"

// fixture is a runner over a scripted processor: a body's "kind" says what
// the item does (see process).
type fixture struct {
	runner  *runner.Runner
	tasks   *runnertest.Tasks
	queue   *runnertest.Queue
	logs    *runnertest.Lines
	metrics *runnertest.Lines
	started atomic.Int32
	active  atomic.Int32
	peak    atomic.Int32
}

type script struct {
	Kind      string `json:"kind"`
	Sleep     string `json:"sleep"`
	TaskToken string `json:"task_token"`
}

func (f *fixture) process(ctx context.Context, it *runner.Item) (any, error) {
	f.started.Add(1)
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	var s script
	if err := runner.Decode(it.Body, &s); err != nil {
		return nil, err
	}
	u, _ := url.Parse("https://mcp.example.com/mcp?key=query-secret")
	it.SetServer(u)
	it.AddSecret("token-secret")
	it.SetUsage("2025-11-25", 3, 120)
	if s.Sleep != "" {
		d, _ := time.ParseDuration(s.Sleep)
		octx, cancel := it.OperationContext(ctx)
		defer cancel()
		select {
		case <-time.After(d):
		case <-octx.Done():
			return nil, wire.Errorf(wire.ConnectionFailed, octx.Err(), "slow")
		}
	}
	switch s.Kind {
	case "ok":
		return map[string]string{"item": it.ID}, nil
	case "panic":
		panic("processor bug")
	}
	switch s.Kind {
	case "final":
		return nil, &wire.Error{Type: wire.ConnectionFailed, Message: "replayed", Final: true}
	case "in_progress":
		return nil, &wire.Error{Type: wire.Internal, Message: "another delivery is in progress", Requeue: true}
	}
	return nil, wire.Errorf(wire.ErrorType(s.Kind), errors.New("cause mentions https://mcp.example.com/mcp?key=query-secret and token-secret"), "%s happened", s.Kind)
}

func newFixture(t *testing.T, cfg runner.Config) *fixture {
	t.Helper()
	f := &fixture{tasks: &runnertest.Tasks{}, queue: &runnertest.Queue{}, logs: &runnertest.Lines{}, metrics: &runnertest.Lines{}}
	if cfg.Function == "" {
		cfg.Function = "test"
	}
	cfg.Tasks = f.tasks
	cfg.Queue = f.queue
	cfg.Logger = slog.New(slog.NewJSONHandler(f.logs, nil))
	cfg.Metrics = f.metrics
	r, err := runner.NewRunner(cfg, runner.ProcessorFunc(f.process))
	if err != nil {
		t.Fatal(err)
	}
	f.runner = r
	return f
}

func body(kind string, extra ...string) string {
	s := `{"kind":"` + kind + `"`
	for i := 0; i+1 < len(extra); i += 2 {
		s += `,"` + extra[i] + `":"` + extra[i+1] + `"`
	}
	return s + "}"
}

func failures(t *testing.T, out any) []string {
	t.Helper()
	resp, ok := out.(events.SQSEventResponse)
	if !ok {
		t.Fatalf("result is %T, want events.SQSEventResponse", out)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestDirect(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		want     any
		wantErr  *messages.InvokeResponse_Error
		wantLogs string // the summary's outcome
	}{
		{
			name:     "success returns the result",
			body:     body("ok"),
			want:     map[string]string{"item": "req-1"},
			wantLogs: "succeeded",
		},
		{
			name:     "wire type and scrubbed cause",
			body:     body("mcp_connection_failed_error"),
			wantErr:  &messages.InvokeResponse_Error{Type: "mcp_connection_failed_error", Message: "mcp_connection_failed_error happened: cause mentions https://mcp.example.com and [redacted]"},
			wantLogs: "failed",
		},
		{
			name:     "internal hides the cause",
			body:     body("internal_error"),
			wantErr:  &messages.InvokeResponse_Error{Type: "internal_error", Message: "internal_error happened (request id req-1)"},
			wantLogs: "failed",
		},
		{
			name:     "malformed request",
			body:     `{"kind":"ok","extra":1}`,
			wantErr:  &messages.InvokeResponse_Error{Type: "invalid_request_error", Message: `unknown field "extra"`},
			wantLogs: "failed",
		},
		{
			name:     "not an object",
			body:     `"ok"`,
			wantErr:  &messages.InvokeResponse_Error{Type: "invalid_request_error", Message: "the request must be a JSON object"},
			wantLogs: "failed",
		},
		{
			name:     "panic is internal",
			body:     body("panic"),
			wantErr:  &messages.InvokeResponse_Error{Type: "internal_error", Message: "internal error (request id req-1)"},
			wantLogs: "failed",
		},
		{
			name:     "SQS event from another source",
			body:     `{"Records":[{"messageId":"m","eventSource":"aws:kinesis"}]}`,
			wantErr:  &messages.InvokeResponse_Error{Type: "invalid_request_error", Message: `record 0: event source "aws:kinesis", want aws:sqs`},
			wantLogs: "failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, runner.Config{})
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			got, err := f.runner.Handle(ctx, json.RawMessage(tt.body))
			if tt.wantErr != nil {
				// aws-lambda-go passes a returned InvokeResponse_Error value through as is
				// (TestLambdaReportsTheWireType); a pointer or wrapper would be renamed.
				ive, ok := err.(messages.InvokeResponse_Error)
				if !ok {
					t.Fatalf("error = %#v, want messages.InvokeResponse_Error", err)
				}
				if diff := cmp.Diff(*tt.wantErr, ive); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			} else if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			sums := f.logs.Summaries()
			if len(sums) != 1 || sums[0]["outcome"] != tt.wantLogs {
				t.Errorf("summaries = %v, want one with outcome %q", sums, tt.wantLogs)
			}
		})
	}
}

func TestDirectTaskToken(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		fail    error
		want    any
		wantErr string // wire type of the invocation's error
		reports []runnertest.TaskReport
	}{
		{
			name:    "success goes to the task and is returned",
			body:    body("ok", "task_token", "tok-1"),
			want:    map[string]string{"item": "req-1"},
			reports: []runnertest.TaskReport{{TaskToken: "tok-1", Output: json.RawMessage(`{"item":"req-1"}`)}},
		},
		{
			name:    "failure goes to the task; the invocation succeeds",
			body:    body("mcp_authentication_failed_error", "task_token", "tok-1"),
			reports: []runnertest.TaskReport{{TaskToken: "tok-1", Error: "mcp_authentication_failed_error", Cause: "mcp_authentication_failed_error happened: cause mentions https://mcp.example.com and [redacted]"}},
		},
		{
			name:    "a malformed body still fails its task",
			body:    `{"task_token":"tok-1","unknown":true}`,
			reports: []runnertest.TaskReport{{TaskToken: "tok-1", Error: "invalid_request_error", Cause: `unknown field "unknown"`}},
		},
		{
			name:    "a failed report fails the invocation",
			body:    body("ok", "task_token", "tok-1"),
			fail:    errors.New("throttled"),
			wantErr: "internal_error",
		},
		{
			name:    "a duplicate in progress fails the invocation and leaves the task alone",
			body:    body("in_progress", "task_token", "tok-1"),
			wantErr: "internal_error",
		},
		{
			name: "a closed task: the invocation succeeds",
			body: body("ok", "task_token", "tok-1"),
			fail: &sfntypes.TaskTimedOut{},
			want: map[string]string{"item": "req-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, runner.Config{})
			f.tasks.Fail = tt.fail
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			got, err := f.runner.Handle(ctx, json.RawMessage(tt.body))
			if gotType := errorType(err); gotType != tt.wantErr {
				t.Fatalf("error = %v, want type %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.reports, f.tasks.Reports()); diff != "" {
				t.Errorf("task reports (-want +got):\n%s", diff)
			}
		})
	}
}

func errorType(err error) string {
	var ive messages.InvokeResponse_Error
	if errors.As(err, &ive) {
		return ive.Type
	}
	if err != nil {
		return fmt.Sprintf("%T", err)
	}
	return ""
}

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

// TestClosedTask: when Step Functions answers that the task already has
// its outcome or is gone, through the real SDK client, the record is done
// and the summary line says so at warn level, naming the error but not the
// token; any other refusal sends the record back.
func TestClosedTask(t *testing.T) {
	const token = "AAAAKgAAAAIAAAAAAAAAA-canary-task-token"
	tests := []struct {
		code        string // the __type Step Functions answers with
		body        string
		wantFailed  bool
		wantOutcome string
	}{
		{"TaskTimedOut", body("ok", "task_token", token), false, "task_closed"},
		{"TaskDoesNotExist", body("ok", "task_token", token), false, "task_closed"},
		{"InvalidToken", body("mcp_protocol_error", "task_token", token), false, "task_closed"},
		{"InvalidOutput", body("ok", "task_token", token), true, "report_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"__type":"com.amazonaws.swf.service.v2.model#%s","message":"Provided task does not exist anymore"}`, tt.code)
			}))
			t.Cleanup(srv.Close)
			logs := &runnertest.Lines{}
			r, err := runner.NewRunner(runner.Config{
				Function: "test",
				Tasks: sfn.New(sfn.Options{
					Region:       "us-east-1",
					BaseEndpoint: aws.String(srv.URL),
					Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
					HTTPClient:   srv.Client(),
				}),
				Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
				Metrics: io.Discard,
			}, runner.ProcessorFunc((&fixture{}).process))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			out, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(failures(t, out)) == 1; got != tt.wantFailed {
				t.Errorf("failed = %t, want %t", got, tt.wantFailed)
			}
			sums := logs.Summaries()
			if len(sums) != 1 || sums[0]["outcome"] != tt.wantOutcome {
				t.Fatalf("summaries = %v, want outcome %q", sums, tt.wantOutcome)
			}
			if tt.wantOutcome == "task_closed" && (sums[0]["level"] != "WARN" || sums[0]["task_report_error"] != tt.code) {
				t.Errorf("summary = %v, want level WARN and task_report_error %s", sums[0], tt.code)
			}
			if strings.Contains(logs.String(), "canary-task-token") {
				t.Errorf("the task token leaked into the logs:\n%s", logs.String())
			}
		})
	}
}

// TestBatchDeadlineTooShort: two at a time, 4.5 s each, 10 s to the deadline
// and a 1 s reserve: the third pair starts at 9 s with no budget left.
func TestBatchDeadlineTooShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Concurrency: 2, Reserve: time.Second, MinBudget: time.Second})
		var bodies []string
		for range 6 {
			bodies = append(bodies, body("ok", "sleep", "4.5s"))
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

func TestBudget(t *testing.T) {
	tests := []struct {
		name       string
		timeout    time.Duration // to the invocation deadline; 0 means none
		op         time.Duration
		wantBudget time.Duration // 0 means not started
	}{
		{name: "operation timeout binds", timeout: 15 * time.Minute, op: 2 * time.Minute, wantBudget: 2 * time.Minute},
		{name: "deadline binds", timeout: 30 * time.Second, op: 2 * time.Minute, wantBudget: 25 * time.Second},
		{name: "no deadline", op: 2 * time.Minute, wantBudget: 2 * time.Minute},
		{name: "exactly the minimum", timeout: 6 * time.Second, op: 2 * time.Minute, wantBudget: time.Second},
		{name: "below the minimum", timeout: 5999 * time.Millisecond, op: 2 * time.Minute},
		{name: "deadline inside the reserve", timeout: 3 * time.Second, op: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got time.Duration
				r, err := runner.NewRunner(runner.Config{
					Function: "test", OperationTimeout: tt.op, Reserve: 5 * time.Second,
					Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{},
				}, runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
					got = time.Until(it.Deadline)
					return "ok", nil
				}))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := runnertest.Context(t.Context(), "req-1", tt.timeout)
				defer cancel()
				_, err = r.Handle(ctx, json.RawMessage(`{}`))
				if tt.wantBudget == 0 {
					if errorType(err) != "internal_error" {
						t.Errorf("error = %v, want internal_error (not started)", err)
					}
					return
				}
				if err != nil || got != tt.wantBudget {
					t.Errorf("budget = %s, err %v; want %s", got, err, tt.wantBudget)
				}
			})
		})
	}
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

// TestNothingSecretLeaves: the token and the URL's query never reach the
// logs, metrics, wire errors, DLQ attributes or task causes.
func TestNothingSecretLeaves(t *testing.T) {
	f := newFixture(t, runner.Config{DLQURL: dlqURL})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	var seen []string
	for _, kind := range wire.ErrorTypes {
		_, err := f.runner.Handle(ctx, json.RawMessage(body(string(kind))))
		seen = append(seen, fmt.Sprint(err))
		_, err = f.runner.Handle(ctx, json.RawMessage(body(string(kind), "task_token", "t")))
		seen = append(seen, fmt.Sprint(err))
	}
	var bodies []string
	for _, kind := range wire.ErrorTypes {
		bodies = append(bodies, body(string(kind)))
	}
	if _, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...))); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.queue.Sent() {
		seen = append(seen, fmt.Sprint(m.Attributes))
	}
	for _, r := range f.tasks.Reports() {
		seen = append(seen, r.Cause)
	}
	seen = append(seen, f.logs.String(), f.metrics.String())
	all := strings.Join(seen, "\n")
	for _, secret := range []string{"token-secret", "query-secret", "/mcp?"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q leaked:\n%s", secret, all)
		}
	}
	if !strings.Contains(f.logs.String(), `"server":"https://mcp.example.com"`) {
		t.Errorf("summary lines lack the server origin:\n%s", f.logs.String())
	}
}

func TestSummaryLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Function: "discover"})
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
		defer cancel()
		if _, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("mcp_protocol_error", "sleep", "1500ms")))); err != nil {
			t.Fatal(err)
		}
		sums := f.logs.Summaries()
		if len(sums) != 1 {
			t.Fatalf("summaries = %v, want 1", sums)
		}
		got := sums[0]
		delete(got, "time")
		want := map[string]any{
			"level":               "WARN",
			"msg":                 "work item",
			"function":            "discover",
			"cold_start":          true, // the runner's first invocation
			"request_id":          "req-1",
			"function_request_id": "req-1",
			"work_item":           "msg-0",
			"source":              "sqs",
			"task_token":          false,
			"server":              "https://mcp.example.com",
			"protocol_version":    "2025-11-25",
			"outcome":             "requeued",
			"error_type":          "mcp_protocol_error",
			"requests":            float64(3),
			"response_bytes":      float64(120),
			"duration_ms":         float64(1500),
			"error":               "mcp_protocol_error: mcp_protocol_error happened: cause mentions https://mcp.example.com and [redacted]",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summary (-want +got):\n%s", diff)
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Function: "call"})
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
		defer cancel()
		if _, err := f.runner.Handle(ctx, json.RawMessage(body("mcp_egress_denied_error", "sleep", "250ms"))); err == nil {
			t.Fatal("Handle succeeded, want an error")
		}
		recs := f.metrics.Records()
		if len(recs) != 2 || recs[0]["ColdStart"] != float64(1) {
			t.Fatalf("metric lines = %v, want the ColdStart line and the item's", recs)
		}
		want := map[string]any{
			"_aws": map[string]any{
				"Timestamp": float64(time.Now().UnixMilli()),
				"CloudWatchMetrics": []any{
					map[string]any{
						"Namespace":  "mcpfn",
						"Dimensions": []any{[]any{"Function"}},
						"Metrics": []any{
							map[string]any{"Name": "WorkItems", "Unit": "Count"},
							map[string]any{"Name": "NotStarted", "Unit": "Count"},
							map[string]any{"Name": "Duration", "Unit": "Milliseconds"},
							map[string]any{"Name": "ResponseBytes", "Unit": "Bytes"},
						},
					},
					map[string]any{
						"Namespace":  "mcpfn",
						"Dimensions": []any{[]any{"Function", "ErrorType"}},
						"Metrics":    []any{map[string]any{"Name": "Failures", "Unit": "Count"}},
					},
				},
			},
			"Function":      "call",
			"Outcome":       "failed",
			"ErrorType":     "mcp_egress_denied_error",
			"WorkItems":     float64(1),
			"NotStarted":    float64(0),
			"Failures":      float64(1),
			"Duration":      float64(250),
			"ResponseBytes": float64(120),
		}
		if diff := cmp.Diff(want, recs[1]); diff != "" {
			t.Errorf("EMF line (-want +got):\n%s", diff)
		}
	})
}

func TestNewRunnerRefuses(t *testing.T) {
	p := runner.ProcessorFunc(func(context.Context, *runner.Item) (any, error) { return nil, nil })
	tests := []struct {
		name string
		cfg  runner.Config
	}{
		{"no function name", runner.Config{}},
		{"DLQ without a queue client", runner.Config{Function: "f", DLQURL: dlqURL}},
		{"negative reserve", runner.Config{Function: "f", Reserve: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := runner.NewRunner(tt.cfg, p); err == nil {
				t.Error("NewRunner succeeded, want an error")
			}
		})
	}
}

// FuzzHandle: no payload panics the runner, and every direct failure carries
// one of the wire types.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{body("ok"), `{"Records":[{"messageId":"m","eventSource":"aws:sqs","body":"{}"}]}`, `[]`, `null`, `{"task_token":1}`} {
		f.Add([]byte(s))
	}
	r, err := runner.NewRunner(runner.Config{Function: "fuzz", Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{}, Tasks: &runnertest.Tasks{}},
		runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
			var s script
			if err := runner.Decode(it.Body, &s); err != nil {
				return nil, err
			}
			return s, nil
		}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		_, err := r.Handle(t.Context(), payload)
		if err == nil {
			return
		}
		ive, ok := err.(messages.InvokeResponse_Error)
		if !ok || !slices.Contains(wire.ErrorTypes, wire.ErrorType(ive.Type)) {
			t.Errorf("error %#v is not a wire error", err)
		}
	})
}
