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
