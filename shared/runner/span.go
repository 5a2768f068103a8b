package runner

// This file traces a work item: one span per item, continuing the trace
// it was invoked in, ended and flushed when its summary line is written.

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpfn/mcpfn/shared/wire"
)

// AttrTraceHeader is the SQS system attribute that carries a message's
// X-Ray trace header.
const AttrTraceHeader = "AWSTraceHeader"

// TracerName names the runner's tracer (the instrumentation scope).
const TracerName = "github.com/mcpfn/mcpfn/shared/runner"

// Attributes of a work item's span, beside the conventions' faas.* and
// error.type: the summary line's fields.
const (
	attrFunction      = attribute.Key("mcpfn.function")
	attrSource        = attribute.Key("mcpfn.source")
	attrOutcome       = attribute.Key("mcpfn.outcome")
	attrRequests      = attribute.Key("mcpfn.requests")
	attrResponseBytes = attribute.Key("mcpfn.response_bytes")
	attrTaskToken     = attribute.Key("mcpfn.task_token")
)

// startSpan starts it's span as a child of the X-Ray trace header (a
// remote parent; a header without Root and Parent starts a new trace).
// Tracing off, the span is a no-op.
func (r *Runner) startSpan(it *Item, header string) {
	if !r.cfg.Tracing.Enabled() {
		it.span = noop.Span{}
		return
	}
	ctx := context.Background()
	if header != "" {
		ctx = xray.Propagator{}.Extract(ctx, propagation.MapCarrier{"X-Amzn-Trace-Id": header})
	}
	kind, trigger := trace.SpanKindServer, semconv.FaaSTriggerOther
	if it.Source == SQS {
		kind, trigger = trace.SpanKindConsumer, semconv.FaaSTriggerPubSub
	}
	_, it.span = r.cfg.Tracing.Provider.Tracer(TracerName).Start(ctx, r.cfg.Function, trace.WithSpanKind(kind),
		trace.WithAttributes(trigger, semconv.FaaSInvocationID(it.RequestID), semconv.FaaSColdstart(it.coldStart),
			attrFunction.String(r.cfg.Function), attrSource.String(it.Source.String()), attrTaskToken.Bool(it.TaskToken != "")))
}

// spanContext returns ctx carrying it's span, the parent of the work's.
func (it *Item) spanContext(ctx context.Context) context.Context {
	if it.span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, it.span)
}

// endSpan records the summary line's fields on it's span, ends it and
// flushes the exporter, within the invocation's deadline less the reserve's
// margin (and the flush timeout). It returns the summary line's
// trace_export field, "failed", when the flush did not finish.
func (r *Runner) endSpan(it *Item, o Outcome, err error, requests int, bytes int64) []slog.Attr {
	if it.span == nil || !it.span.IsRecording() {
		return nil
	}
	it.span.SetAttributes(attrOutcome.String(o.String()), attrRequests.Int(requests), attrResponseBytes.Int64(bytes))
	if err != nil {
		t := string(wire.TypeOf(err))
		it.span.SetAttributes(semconv.ErrorTypeKey.String(t))
		it.span.SetStatus(codes.Error, t)
	}
	it.span.End()
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !it.flushBy.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, it.flushBy.Add(-r.shares.margin))
	}
	defer cancel()
	if ferr := r.cfg.Tracing.Flush(ctx); ferr != nil {
		return []slog.Attr{slog.String("trace_export", "failed")}
	}
	return nil
}
