package startup

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// traced returns a Startup whose tracing records into the returned
// recorder, with a directory catalog store.
func traced(t *testing.T) (*Startup, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return &Startup{Tracing: telemetry.NewTracing(rec, "call"), Settings: Settings{CatalogDir: t.TempDir()},
		Logger: slog.New(slog.DiscardHandler)}, rec
}

// opSpan is what the tests compare of an operation's span.
type opSpan struct {
	Name  string
	Attrs map[string]string
}

// children runs f under a recording "item" span and returns the spans
// that ended during f, each checked to be its child, in order.
func children(t *testing.T, st *Startup, rec *tracetest.SpanRecorder, f func(ctx context.Context)) []opSpan {
	t.Helper()
	ctx, item := st.Tracing.Provider.Tracer("test").Start(t.Context(), "item")
	before := len(rec.Ended())
	f(ctx)
	item.End()
	var got []opSpan
	for _, s := range rec.Ended()[before:] {
		if s.Name() == "item" {
			continue
		}
		if s.Parent().SpanID() != item.SpanContext().SpanID() {
			t.Errorf("span %s is not the item's child", s.Name())
		}
		got = append(got, opSpan{Name: s.Name(), Attrs: attrs(s)})
	}
	return got
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestCatalogSpans: with tracing on, each operation of the opened store is
// a span under the work item's naming the catalog id; an error is its
// error.type word; outside a work item, no span.
func TestCatalogSpans(t *testing.T) {
	st, rec := traced(t)
	store, err := st.OpenCatalog()
	if err != nil {
		t.Fatal(err)
	}
	got := children(t, st, rec, func(ctx context.Context) {
		d := catalog.Discovery{Listing: mcp.Listing{Tools: []mcp.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}},
			ProtocolVersion: "2025-11-25", StartedAt: time.Now()}
		if _, err := store.Put(ctx, "cat-1", d); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Get(ctx, "cat-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Lookup(ctx, "cat-1", "echo"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Get(ctx, "missing"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("Get(missing) = %v", err)
		}
		if _, err := store.ServerURL(ctx, "cat-1"); !errors.Is(err, catalog.ErrNoServerURL) {
			t.Fatalf("ServerURL = %v", err)
		}
		if err := store.RecordFailure(ctx, "cat-1", catalog.Failure{ErrorType: "mcp_connection_failed_error", Message: "m", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	})
	version := ""
	if len(got) > 0 {
		version = got[0].Attrs["mcpfn.catalog.version"]
	}
	want := []opSpan{
		{"catalog.put", map[string]string{"mcpfn.catalog_id": "cat-1", "mcpfn.catalog.version": version, "mcpfn.catalog.tool_count": "1", "mcpfn.catalog.unchanged": "false"}},
		{"catalog.get", map[string]string{"mcpfn.catalog_id": "cat-1"}},
		{"catalog.lookup", map[string]string{"mcpfn.catalog_id": "cat-1", "mcpfn.catalog.found": "true", "mcpfn.catalog.version": version}},
		{"catalog.get", map[string]string{"mcpfn.catalog_id": "missing", "error.type": "not_found"}},
		{"catalog.server_url", map[string]string{"mcpfn.catalog_id": "cat-1", "error.type": "no_server_url"}},
		{"catalog.record_failure", map[string]string{"mcpfn.catalog_id": "cat-1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" || version == "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	n := len(rec.Ended())
	if _, err := store.Get(t.Context(), "cat-1"); err != nil || len(rec.Ended()) != n {
		t.Errorf("Get outside a work item: %v, %d spans; want none", err, len(rec.Ended())-n)
	}
}

// TestLedgerSpans: each ledger operation is a span under the work item's,
// with the entry Begin found and never the key.
func TestLedgerSpans(t *testing.T) {
	const key = "toolu_key-canary"
	st, rec := traced(t)
	l := st.TraceLedger(ledger.NewMemory(time.Minute))
	got := children(t, st, rec, func(ctx context.Context) {
		if _, err := l.Begin(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Begin(ctx, key); !errors.Is(err, ledger.ErrInProgress) {
			t.Fatalf("second Begin = %v", err)
		}
		if err := l.Suspend(ctx, key, ledger.Pending{Tool: "echo", ArgsDigest: "d", TaskID: "task-1"}); err != nil {
			t.Fatal(err)
		}
		if e, err := l.Begin(ctx, key); err != nil || e.Pending == nil {
			t.Fatalf("third Begin = %+v, %v; want the pending entry", e, err)
		}
		if err := l.Complete(ctx, key, ledger.Outcome{ErrorType: "mcp_protocol_error", Message: "m"}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Begin(ctx, key); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, key); !errors.Is(err, ledger.ErrNotOwner) {
			t.Fatalf("Release = %v", err)
		}
	})
	want := []opSpan{
		{"ledger.begin", map[string]string{"mcpfn.ledger.entry": "new"}},
		{"ledger.begin", map[string]string{"error.type": "in_progress"}},
		{"ledger.suspend", map[string]string{"mcpfn.ledger.pending": "task"}},
		{"ledger.begin", map[string]string{"mcpfn.ledger.entry": "pending"}},
		{"ledger.complete", map[string]string{"mcpfn.reported_error_type": "mcp_protocol_error"}},
		{"ledger.begin", map[string]string{"mcpfn.ledger.entry": "done"}},
		{"ledger.release", map[string]string{"error.type": "not_owner"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	off := ledger.NewMemory(time.Minute)
	if l := (&Startup{Tracing: &telemetry.Tracing{}}).TraceLedger(off); l != Ledger(off) {
		t.Errorf("tracing off: TraceLedger = %T, want the ledger itself", l)
	}
}

type fakeTasks struct{ err error }

func (f fakeTasks) SendTaskSuccess(context.Context, *sfn.SendTaskSuccessInput, ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	return &sfn.SendTaskSuccessOutput{}, f.err
}

func (f fakeTasks) SendTaskFailure(context.Context, *sfn.SendTaskFailureInput, ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	return &sfn.SendTaskFailureOutput{}, f.err
}

type fakeQueue struct{}

func (fakeQueue) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{}, nil
}

// TestReportSpans: with tracing on, RunnerConfig's task report and
// dead-letter send are spans under the work item's, with the reported
// status and wire type and never the token, URL or body.
func TestReportSpans(t *testing.T) {
	const canary = "report-canary"
	st, rec := traced(t)
	cfg := st.RunnerConfig()
	if _, ok := cfg.Queue.(tracedDLQ); !ok {
		t.Errorf("Queue is %T, want the traced one", cfg.Queue)
	}
	if _, ok := cfg.Tasks.(tracedTasks); !ok {
		t.Errorf("Tasks is %T, want the traced one", cfg.Tasks)
	}
	tr := st.Tracing.ChildTracer(TracerName)
	tasks, closed := tracedTasks{next: fakeTasks{}, tr: tr}, tracedTasks{next: fakeTasks{err: &sfntypes.TaskTimedOut{Message: aws.String(canary)}}, tr: tr}
	dlq := tracedDLQ{next: fakeQueue{}, tr: tr}
	got := children(t, st, rec, func(ctx context.Context) {
		_, _ = tasks.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(canary), Output: aws.String(canary)})
		_, _ = closed.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(canary), Error: aws.String("mcp_protocol_error"), Cause: aws.String(canary)})
		_, _ = dlq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("https://q/" + canary), MessageBody: aws.String(canary),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"mcpfn.error_type": {DataType: aws.String("String"), StringValue: aws.String("invalid_request_error")}}})
	})
	want := []opSpan{
		{"task.report", map[string]string{"mcpfn.task.status": "success"}},
		{"task.report", map[string]string{"mcpfn.task.status": "failure", "mcpfn.reported_error_type": "mcp_protocol_error", "error.type": "TaskTimedOut"}},
		{"dlq.send", map[string]string{"mcpfn.reported_error_type": "invalid_request_error"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	for _, s := range rec.Ended() {
		for _, e := range s.Events() {
			t.Errorf("span %s has event %s", s.Name(), e.Name)
		}
		if strings.Contains(s.Status().Description, canary) {
			t.Errorf("span %s status holds the canary", s.Name())
		}
	}
}
