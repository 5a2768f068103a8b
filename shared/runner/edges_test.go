package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// TestInvokeTakesTheRawPayload: what the Lambda runtime could not decode
// reaches the runner and gets invalid_request_error, not a runtime error.
func TestInvokeTakesTheRawPayload(t *testing.T) {
	f := newFixture(t, runner.Config{})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	for name, payload := range map[string]string{
		"not JSON":           "hello",
		"truncated":          `{"kind":"ok"`,
		"100,000 deep":       strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000),
		"200 KB object deep": `{"kind":` + strings.Repeat(`{"a":`, 40_000) + "1" + strings.Repeat("}", 40_000) + "}",
		"invalid UTF-8":      "{\"kind\":\"o\xffk\"}",
		"trailing data":      `{"kind":"ok"} {"kind":"ok"}`,
		"a case variant":     `{"kind":"ok","KIND":"mcp_protocol_error"}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := f.runner.Invoke(ctx, []byte(payload))
			var ie messages.InvokeResponse_Error
			if !errors.As(err, &ie) || ie.Type != "invalid_request_error" {
				t.Fatalf("Invoke = %q, %#v; want invalid_request_error", out, err)
			}
		})
	}
	out, err := f.runner.Invoke(ctx, []byte(body("ok")))
	if err != nil || string(out) != `{"item":"req-1"}`+"\n" {
		t.Errorf("Invoke = %q, %v", out, err)
	}
}

// TestTaskTokenLimit: a task_token past Step Functions' 2,048 characters is
// refused before the processor runs, and nothing is reported to it.
func TestTaskTokenLimit(t *testing.T) {
	f := newFixture(t, runner.Config{DLQURL: dlqURL})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	long := strings.Repeat("t", runner.MaxTaskToken+1)

	_, err := f.runner.Handle(ctx, json.RawMessage(body("ok", "task_token", long)))
	if got := errorType(err); got != "invalid_request_error" || !strings.Contains(err.Error(), `field \"task_token\": 2049 characters, at most 2048`) && !strings.Contains(err.Error(), `field "task_token": 2049 characters`) {
		t.Errorf("direct: error %v, want invalid_request_error naming task_token", err)
	}
	out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("ok", "task_token", long))))
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("SQS: Handle = %v, %v", out, err)
	}
	if sent := f.queue.Sent(); len(sent) != 1 || sent[0].Attributes["mcpfn.error_type"] != "invalid_request_error" {
		t.Errorf("SQS: dead-lettered %+v, want the record with invalid_request_error", sent)
	}
	if got := f.started.Load(); got != 0 {
		t.Errorf("the processor ran %d times, want 0", got)
	}
	if r := f.tasks.Reports(); len(r) != 0 {
		t.Errorf("reported %+v to a token Step Functions would refuse", r)
	}

	atLimit := strings.Repeat("t", runner.MaxTaskToken)
	if _, err := f.runner.Handle(ctx, json.RawMessage(body("ok", "task_token", atLimit))); err != nil {
		t.Fatal(err)
	}
	if r := f.tasks.Reports(); len(r) != 1 || r[0].TaskToken != atLimit || r[0].Error != "" {
		t.Errorf("reports %+v, want one success to the 2,048-character token", r)
	}
}

// TestMemoryBudgetBoundsItemsInFlight: items beyond the shares the budget
// holds wait for one, across the records of a batch and across Handle
// calls, and none fails for it.
func TestMemoryBudgetBoundsItemsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Concurrency: 10, MemoryBudget: 2*runner.ItemBytes + 1})
		var bodies []string
		for range 10 {
			bodies = append(bodies, body("ok", "sleep", "1s"))
		}
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Hour)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := f.runner.Handle(ctx, json.RawMessage(body("ok", "sleep", "1s")))
			done <- err
		}()
		out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...)))
		if err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("Handle = %v, %v", out, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := f.peak.Load(); got != 2 {
			t.Errorf("peak items in flight %d, want 2", got)
		}
		if got := f.started.Load(); got != 11 {
			t.Errorf("started %d items, want 11", got)
		}
	})
}

// TestMemoryBudgetWaitEndsInTime: a record that cannot get a share while a
// useful budget is left comes back unstarted, without failing.
func TestMemoryBudgetWaitEndsInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Concurrency: 10, MemoryBudget: runner.ItemBytes, Reserve: time.Second, MinBudget: time.Second})
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 10*time.Second)
		defer cancel()
		out, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("ok", "sleep", "8500ms"), body("ok", "sleep", "8500ms"))))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"msg-1"}, failures(t, out)); diff != "" {
			t.Errorf("batch item failures (-want +got):\n%s", diff)
		}
		for _, s := range f.logs.Summaries() {
			if s["work_item"] == "msg-1" && s["outcome"] != "not_started" {
				t.Errorf("msg-1: outcome %v, want not_started", s["outcome"])
			}
		}
	})
}

// hang is a processor whose operation ends at once or at its deadline
// ("op": "full") and whose work after it (a store write) never answers.
func hang(ctx context.Context, it *runner.Item) (any, error) {
	var s struct {
		Kind string `json:"kind"`
	}
	if err := runner.Decode(it.Body, &s); err != nil {
		return nil, err
	}
	octx, cancel := it.OperationContext(ctx)
	if s.Kind == "full" {
		<-octx.Done()
	}
	cancel()
	if s.Kind == "ok" {
		return "stored", nil
	}
	<-ctx.Done() // the store never answers
	return nil, wire.Errorf(wire.Internal, ctx.Err(), "the catalog store failed")
}

// TestReserveBoundsTheWorkAfterTheOperation: a store that never answers
// ends its record a share of the reserve after the operation's deadline,
// as a retryable failure; the
// invocation answers before its deadline with the finished records done.
func TestReserveBoundsTheWorkAfterTheOperation(t *testing.T) {
	tests := []struct {
		name      string
		timeout   time.Duration
		kind      string
		wantAfter time.Duration // from the invocation's start to its answer
	}{
		// Reserve 5s: 0.5s margin, 2.7s after the operation, 1.8s to report.
		{name: "early operation", timeout: time.Hour, kind: "early", wantAfter: 2*time.Minute + 2700*time.Millisecond},
		{name: "operation to its deadline", timeout: 10 * time.Second, kind: "full", wantAfter: 5*time.Second + 2700*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := &runnertest.Lines{}
				r, err := runner.NewRunner(runner.Config{Function: "test", Reserve: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: &runnertest.Lines{}},
					runner.ProcessorFunc(hang))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := runnertest.Context(t.Context(), "req-1", tt.timeout)
				defer cancel()
				start := time.Now()
				out, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("ok"), body(tt.kind), body("ok"))))
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tt.wantAfter {
					t.Errorf("answered after %s, want %s", got, tt.wantAfter)
				}
				if diff := cmp.Diff([]string{"msg-1"}, failures(t, out)); diff != "" {
					t.Errorf("batch item failures (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// stuckTasks is a Step Functions client that never answers.
type stuckTasks struct{ calls atomic.Int32 }

func (s *stuckTasks) SendTaskSuccess(ctx context.Context, _ *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *stuckTasks) SendTaskFailure(ctx context.Context, _ *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestReserveBoundsReporting: a task report that never answers ends after
// the reserve's report share and the record comes back.
func TestReserveBoundsReporting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tasks := &stuckTasks{}
		r, err := runner.NewRunner(runner.Config{Function: "test", Reserve: 5 * time.Second, Tasks: tasks, Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{}},
			runner.ProcessorFunc(hang))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Hour)
		defer cancel()
		start := time.Now()
		out, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("ok", "task_token", "tok"))))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := time.Since(start), 1800*time.Millisecond; got != want {
			t.Errorf("answered after %s, want %s", got, want)
		}
		if diff := cmp.Diff([]string{"msg-0"}, failures(t, out)); diff != "" || tasks.calls.Load() != 1 {
			t.Errorf("batch item failures (-want +got):\n%s; %d reports", diff, tasks.calls.Load())
		}
	})
}

// TestRefusedURLsAreScrubbedFromTheFirstByte: a server URL refused before
// any dial reaches no message with its path, query or userinfo.
func TestRefusedURLsAreScrubbedFromTheFirstByte(t *testing.T) {
	check := func(ctx context.Context, it *runner.Item) (any, error) {
		var req struct {
			ServerURL string `json:"server_url"`
			TaskToken string `json:"task_token"`
		}
		if err := runner.Decode(it.Body, &req); err != nil {
			return nil, err
		}
		if _, err := wire.CheckServerURL(req.ServerURL, guard.Default()); err != nil {
			return nil, fmt.Errorf("%w (checking %s)", err, req.ServerURL)
		}
		return nil, wire.Errorf(wire.ConnectionFailed, errors.New("dial "+req.ServerURL+": refused"), "could not connect")
	}
	urls := map[string]string{
		"plain http":    "http://mcp.example.com/sk-path-secret/x?key=q-secret",
		"userinfo":      "https://user:pw-secret@mcp.example.com/sk-path-secret",
		"port 0":        "https://mcp.example.com:0/sk-path-secret",
		"port 99999":    "https://mcp.example.com:99999/sk-path-secret",
		"no host":       "https:///sk-path-secret?q-secret",
		"bad escape":    "https://mcp.example.com/sk-path-secret/%zz",
		"no scheme":     "mcp.example.com/sk-path-secret",
		"loopback":      "https://127.0.0.1/sk-path-secret",
		"allowed shape": "https://mcp.example.com/sk-path-secret?key=q-secret",
	}
	for name, u := range urls {
		t.Run(name, func(t *testing.T) {
			logs, metrics, queue, tasks := &runnertest.Lines{}, &runnertest.Lines{}, &runnertest.Queue{}, &runnertest.Tasks{}
			r, err := runner.NewRunner(runner.Config{Function: "test", DLQURL: dlqURL, Queue: queue, Tasks: tasks,
				Logger: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: metrics}, runner.ProcessorFunc(check))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			req := func(extra string) string {
				b, _ := json.Marshal(u)
				return `{"server_url":` + string(b) + extra + `}`
			}
			var seen []string
			_, err = r.Handle(ctx, json.RawMessage(req("")))
			seen = append(seen, fmt.Sprint(err))
			_, err = r.Handle(ctx, json.RawMessage(req(`,"task_token":"tok"`)))
			seen = append(seen, fmt.Sprint(err))
			if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(req("")))); err != nil {
				t.Fatal(err)
			}
			for _, m := range queue.Sent() {
				seen = append(seen, fmt.Sprint(m.Attributes))
			}
			for _, rep := range tasks.Reports() {
				seen = append(seen, rep.Cause)
			}
			seen = append(seen, logs.String(), metrics.String())
			all := strings.Join(seen, "\n")
			if strings.Contains(all, "secret") {
				t.Errorf("the URL's path, query or userinfo leaked:\n%s", all)
			}
		})
	}
}
