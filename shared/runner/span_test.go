package runner_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/telemetry"
	"github.com/mcpfn/mcpfn/shared/wire"
)

const (
	xrayHeader  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	xrayTraceID = "5759e988bd862e3fe1be46a994272793"
	sqsHeader   = "Root=1-6759e988-0d862e3fe1be46a994272794;Parent=63995c3f42cd8ad8;Sampled=0"
	sqsTraceID  = "6759e9880d862e3fe1be46a994272794"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestWorkItemSpan: one span per work item, a child of the invocation's
// X-Ray header (direct) or of its record's AWSTraceHeader (SQS, sampled
// or not), with the summary line's fields; the processor's context
// carries it; nothing secret is in it.
func TestWorkItemSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	f := newFixture(t, runner.Config{Function: "call", Tracing: telemetry.NewTracing(rec, "call")})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	//lint:ignore SA1029 the key aws-lambda-go uses
	ctx = context.WithValue(ctx, "x-amzn-trace-id", xrayHeader)
	if _, err := f.runner.Handle(ctx, []byte(body("mcp_protocol_error"))); err == nil {
		t.Fatal("direct: want the wire error")
	}
	ev := runnertest.SQSEvent(body("ok"), body("ok"))
	ev.Records[0].Attributes[runner.AttrTraceHeader] = sqsHeader
	if _, err := f.runner.Handle(ctx, runnertest.Payload(ev)); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	byItem := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byItem[attrs(s)["faas.trigger"].AsString()+"/"+s.SpanContext().TraceID().String()] = s
	}
	direct := byItem["other/"+xrayTraceID]
	sqs := byItem["pubsub/"+sqsTraceID]
	if direct == nil || sqs == nil {
		t.Fatalf("spans %v: want a direct one in trace %s and an SQS one in %s", byItem, xrayTraceID, sqsTraceID)
	}
	if direct.Parent().SpanID().String() != "53995c3f42cd8ad8" || !direct.Parent().IsRemote() {
		t.Errorf("direct parent = %v, want the header's", direct.Parent())
	}
	a := attrs(direct)
	for k, want := range map[attribute.Key]string{"mcpfn.outcome": "failed", "error.type": "mcp_protocol_error", "mcpfn.source": "direct", "mcpfn.function": "call", "faas.invocation_id": "req-1"} {
		if got := a[k].String(); got != want {
			t.Errorf("direct %s = %q, want %q", k, got, want)
		}
	}
	if a["mcpfn.requests"].AsInt64() != 3 || a["mcpfn.response_bytes"].AsInt64() != 120 {
		t.Errorf("direct requests, bytes = %v, %v; want 3, 120", a["mcpfn.requests"], a["mcpfn.response_bytes"])
	}
	if direct.SpanKind() != trace.SpanKindServer || sqs.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("kinds = %v, %v; want server, consumer", direct.SpanKind(), sqs.SpanKind())
	}
	if got := attrs(sqs)["mcpfn.outcome"].AsString(); got != "succeeded" {
		t.Errorf("sqs outcome = %q, want succeeded", got)
	}
	for _, s := range spans {
		text := s.Name() + s.Status().Description
		for _, kv := range s.Attributes() {
			text += string(kv.Key) + "=" + kv.Value.String() + " "
		}
		for _, canary := range []string{"query-secret", "token-secret", "/mcp"} {
			if strings.Contains(text, canary) {
				t.Errorf("span %s holds %q: %s", s.Name(), canary, text)
			}
		}
	}
}

// TestProcessorGetsTheSpan: the work's spans are children of the item's.
func TestProcessorGetsTheSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.NewTracing(rec, "discover")
	var got trace.SpanContext
	r, err := runner.NewRunner(runner.Config{Function: "discover", Tracing: tr, Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{}},
		runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
			got = trace.SpanFromContext(ctx).SpanContext()
			return "ok", nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	if _, err := r.Handle(ctx, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 || !spans[0].SpanContext().Equal(got) {
		t.Errorf("processor's span %v, item spans %v: want the item's", got, spans)
	}
}

// exporter fails every export, or blocks until its context ends.
type exporter struct{ hang bool }

func (e exporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	if e.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return errors.New("collector answered 500")
}
func (exporter) Shutdown(context.Context) error { return nil }

// TestTraceExportFails: an exporter that fails or never answers fails no
// work item and delays none past the flush bound; the summary line says
// trace_export "failed".
func TestTraceExportFails(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "500", true: "never answers"}[hang], func(t *testing.T) {
			tr := telemetry.NewTracing(sdktrace.NewBatchSpanProcessor(exporter{hang: hang}), "call")
			f := newFixture(t, runner.Config{Function: "call", Tracing: tr, Reserve: 2 * time.Second})
			ctx, cancel := runnertest.Context(t.Context(), "req-1", 3*time.Second+runner.DefaultMinBudget)
			defer cancel()
			start := time.Now()
			v, err := f.runner.Handle(ctx, []byte(body("ok")))
			if err != nil || v == nil {
				t.Fatalf("Handle = %v, %v; want the result", v, err)
			}
			deadline, _ := ctx.Deadline()
			if end := time.Now(); end.After(deadline) {
				t.Errorf("answered %s after the deadline", end.Sub(deadline))
			}
			if d := time.Since(start); d > telemetry.DefaultFlushTimeout+time.Second {
				t.Errorf("took %s, want at most the flush timeout %s and a margin", d, telemetry.DefaultFlushTimeout)
			}
			sums := f.logs.Summaries()
			if len(sums) != 1 || sums[0]["trace_export"] != "failed" || sums[0]["outcome"] != "succeeded" {
				t.Errorf("summaries = %v, want one succeeded with trace_export failed", sums)
			}
		})
	}
}

// TestTracingOffAddsNothing: without Tracing the summary line has no
// trace_export field.
func TestTracingOffAddsNothing(t *testing.T) {
	f := newFixture(t, runner.Config{Function: "call"})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	if _, err := f.runner.Handle(ctx, []byte(body("ok"))); err != nil {
		t.Fatal(err)
	}
	if sums := f.logs.Summaries(); len(sums) != 1 || sums[0]["trace_export"] != nil {
		t.Errorf("summaries = %v, want one without trace_export", sums)
	}
}

// spanSeer records the span in the context of each task report and
// dead-letter send.
type spanSeer struct {
	runnertest.Tasks
	runnertest.Queue
	mu   sync.Mutex
	seen []trace.SpanContext
}

func (s *spanSeer) see(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, trace.SpanFromContext(ctx).SpanContext())
}

func (s *spanSeer) SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	s.see(ctx)
	return s.Tasks.SendTaskSuccess(ctx, in, opts...)
}

func (s *spanSeer) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.see(ctx)
	return s.Queue.SendMessage(ctx, in, opts...)
}

// TestReportsGetTheSpan: the task report and the dead-letter send run
// under the item's span, so that theirs are its children.
func TestReportsGetTheSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	seer := &spanSeer{}
	r, err := runner.NewRunner(runner.Config{Function: "call", Tracing: telemetry.NewTracing(rec, "call"), DLQURL: "https://sqs.example/dlq",
		Queue: seer, Tasks: seer, Logger: slog.New(slog.DiscardHandler), Metrics: &runnertest.Lines{}},
		runner.ProcessorFunc(func(_ context.Context, it *runner.Item) (any, error) {
			if it.TaskToken != "" {
				return "ok", nil
			}
			return nil, wire.Errorf(wire.InvalidRequest, nil, "bad")
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(`{"task_token":"tok-1"}`, `{}`))); err != nil {
		t.Fatal(err)
	}
	items := map[trace.SpanID]bool{}
	for _, s := range rec.Ended() {
		items[s.SpanContext().SpanID()] = true
	}
	if len(seer.seen) != 2 || len(items) != 2 {
		t.Fatalf("%d reports and sends for %d item spans, want 2 and 2", len(seer.seen), len(items))
	}
	for _, sc := range seer.seen {
		if !items[sc.SpanID()] {
			t.Errorf("a report ran under span %v, not an item's", sc)
		}
	}
}
