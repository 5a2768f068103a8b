package startup

// This file traces the work item's own operations beside its MCP requests:
// the catalog store's, the ledger's, the task report and the dead-letter
// send, each a span under the work item's (the AWS SDK calls they make are
// that span's children). Wrapped only when tracing is on.

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/runner"
)

// TracerName names the tracer of the store, ledger, task report and
// dead-letter spans (the instrumentation scope).
const TracerName = "github.com/mcpfn/mcpfn/shared/startup"

// Attributes of the operations' spans: identifiers the summary line logs
// and low-cardinality words, never a key, URL, token or payload.
const (
	attrCatalogID    = attribute.Key("mcpfn.catalog_id")
	attrVersion      = attribute.Key("mcpfn.catalog.version")
	attrToolCount    = attribute.Key("mcpfn.catalog.tool_count")
	attrUnchanged    = attribute.Key("mcpfn.catalog.unchanged")
	attrFound        = attribute.Key("mcpfn.catalog.found")
	attrEntry        = attribute.Key("mcpfn.ledger.entry")   // new, done, pending, took_over
	attrPending      = attribute.Key("mcpfn.ledger.pending") // task, input, approval
	attrTaskStatus   = attribute.Key("mcpfn.task.status")    // success, failure
	attrReportedType = attribute.Key("mcpfn.reported_error_type")
)

// endSpan records err's type (errorType) on span, and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		t := errorType(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(t))
		span.SetStatus(codes.Error, t)
	}
	span.End()
}

// errorType is a low-cardinality word for err: the store's or ledger's
// sentinel, timeout, the AWS error code, or _OTHER.
func errorType(err error) string {
	words := []struct {
		err  error
		word string
	}{
		{context.DeadlineExceeded, "timeout"}, {context.Canceled, "canceled"},
		{catalog.ErrNotFound, "not_found"}, {catalog.ErrInvalidID, "invalid_id"},
		{catalog.ErrUnavailable, "unavailable"}, {catalog.ErrNoServerURL, "no_server_url"},
		{ledger.ErrInProgress, "in_progress"}, {ledger.ErrNotOwner, "not_owner"},
		{ledger.ErrTooLarge, "too_large"}, {ledger.ErrEmptyKey, "empty_key"},
	}
	for _, w := range words {
		if errors.Is(err, w.err) {
			return w.word
		}
	}
	if ae, ok := errors.AsType[smithy.APIError](err); ok && ae.ErrorCode() != "" {
		return ae.ErrorCode()
	}
	return "_OTHER"
}

// tracedCatalog spans each operation of a catalog store.
type tracedCatalog struct {
	next catalog.Store
	tr   trace.Tracer
}

func (c tracedCatalog) start(ctx context.Context, op, id string) (context.Context, trace.Span) {
	return c.tr.Start(ctx, op, trace.WithAttributes(attrCatalogID.String(id)))
}

func (c tracedCatalog) Put(ctx context.Context, id string, d catalog.Discovery) (catalog.PutResult, error) {
	ctx, span := c.start(ctx, "catalog.put", id)
	r, err := c.next.Put(ctx, id, d)
	if err == nil {
		span.SetAttributes(attrVersion.String(r.Version), attrToolCount.Int(r.ToolCount), attrUnchanged.Bool(r.Unchanged))
	}
	endSpan(span, err)
	return r, err
}

func (c tracedCatalog) Get(ctx context.Context, id string) (*catalog.Catalog, error) {
	ctx, span := c.start(ctx, "catalog.get", id)
	r, err := c.next.Get(ctx, id)
	endSpan(span, err)
	return r, err
}

func (c tracedCatalog) Lookup(ctx context.Context, id, toolName string) (catalog.Membership, error) {
	ctx, span := c.start(ctx, "catalog.lookup", id)
	m, err := c.next.Lookup(ctx, id, toolName)
	if err == nil {
		span.SetAttributes(attrFound.Bool(m.Found), attrVersion.String(m.Version))
	}
	endSpan(span, err)
	return m, err
}

func (c tracedCatalog) RecordFailure(ctx context.Context, id string, f catalog.Failure) error {
	ctx, span := c.start(ctx, "catalog.record_failure", id)
	err := c.next.RecordFailure(ctx, id, f)
	endSpan(span, err)
	return err
}

func (c tracedCatalog) ServerURL(ctx context.Context, id string) (string, error) {
	ctx, span := c.start(ctx, "catalog.server_url", id)
	u, err := c.next.ServerURL(ctx, id)
	endSpan(span, err)
	return u, err
}

// Ledger is the idempotency ledger's operations (ledger.Dynamo and
// ledger.Memory), as TraceLedger wraps them.
type Ledger interface {
	Begin(ctx context.Context, key string) (ledger.Entry, error)
	Complete(ctx context.Context, key string, o ledger.Outcome) error
	Release(ctx context.Context, key string) error
	Suspend(ctx context.Context, key string, p ledger.Pending) error
}

var (
	_ Ledger = (*ledger.Dynamo)(nil)
	_ Ledger = (*ledger.Memory)(nil)
)

// TraceLedger returns l with each operation a span under the work item's
// (ledger.begin, ledger.complete, ledger.release, ledger.suspend), never
// naming the key; with tracing off it returns l itself.
func (st *Startup) TraceLedger(l Ledger) Ledger {
	if !st.Tracing.Enabled() {
		return l
	}
	return tracedLedger{next: l, tr: st.Tracing.ChildTracer(TracerName)}
}

type tracedLedger struct {
	next Ledger
	tr   trace.Tracer
}

func (l tracedLedger) Begin(ctx context.Context, key string) (ledger.Entry, error) {
	ctx, span := l.tr.Start(ctx, "ledger.begin")
	e, err := l.next.Begin(ctx, key)
	if err == nil {
		word := "new"
		switch {
		case e.Done:
			word = "done"
		case e.Pending != nil:
			word = "pending"
		case e.TookOver:
			word = "took_over"
		}
		span.SetAttributes(attrEntry.String(word))
	}
	endSpan(span, err)
	return e, err
}

func (l tracedLedger) Complete(ctx context.Context, key string, o ledger.Outcome) error {
	ctx, span := l.tr.Start(ctx, "ledger.complete")
	if o.ErrorType != "" {
		span.SetAttributes(attrReportedType.String(o.ErrorType))
	}
	err := l.next.Complete(ctx, key, o)
	endSpan(span, err)
	return err
}

func (l tracedLedger) Release(ctx context.Context, key string) error {
	ctx, span := l.tr.Start(ctx, "ledger.release")
	err := l.next.Release(ctx, key)
	endSpan(span, err)
	return err
}

func (l tracedLedger) Suspend(ctx context.Context, key string, p ledger.Pending) error {
	kind := "input"
	switch {
	case p.Approval:
		kind = "approval"
	case p.TaskID != "":
		kind = "task"
	}
	ctx, span := l.tr.Start(ctx, "ledger.suspend", trace.WithAttributes(attrPending.String(kind)))
	err := l.next.Suspend(ctx, key, p)
	endSpan(span, err)
	return err
}

// tracedTasks spans the task report: task.report, its status and the
// reported wire error type, never the token or output.
type tracedTasks struct {
	next runner.TaskAPI
	tr   trace.Tracer
}

func (t tracedTasks) SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	ctx, span := t.tr.Start(ctx, "task.report", trace.WithAttributes(attrTaskStatus.String("success")))
	out, err := t.next.SendTaskSuccess(ctx, in, opts...)
	endSpan(span, err)
	return out, err
}

func (t tracedTasks) SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	ctx, span := t.tr.Start(ctx, "task.report", trace.WithAttributes(attrTaskStatus.String("failure"), attrReportedType.String(aws.ToString(in.Error))))
	out, err := t.next.SendTaskFailure(ctx, in, opts...)
	endSpan(span, err)
	return out, err
}

// tracedDLQ spans the dead-letter send: dlq.send and the dead-lettered
// wire error type, never the queue URL, body or message.
type tracedDLQ struct {
	next runner.QueueAPI
	tr   trace.Tracer
}

func (q tracedDLQ) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	ctx, span := q.tr.Start(ctx, "dlq.send", trace.WithAttributes(attrReportedType.String(aws.ToString(in.MessageAttributes["mcpfn.error_type"].StringValue))))
	out, err := q.next.SendMessage(ctx, in, opts...)
	endSpan(span, err)
	return out, err
}
