package telemetry

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	//lint:ignore SA1019 deprecated upstream, kept on purpose (DESIGN.md, "AWS SDK calls")
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentAWS makes every AWS SDK call of the clients built from cfg
// after it a CLIENT span (otelaws: "Service.Operation", rpc.method,
// aws.region, aws.request_id, the HTTP status), a child of the span in the
// call's context. A call whose context holds no recording span, and every
// call when t is off, is traced not at all. Spans carry no request
// parameters: no queue URL, table, secret id or value.
func (t *Tracing) InstrumentAWS(cfg *aws.Config) {
	if !t.Enabled() {
		return
	}
	otelaws.AppendMiddlewares(&cfg.APIOptions,
		otelaws.WithTracerProvider(childOnly{t.Provider}),
		otelaws.WithTextMapPropagator(propagation.NewCompositeTextMapPropagator()),
		otelaws.WithAttributeBuilder(noParameters))
}

// noParameters adds nothing: otelaws' default builders record the SQS
// queue URL (a path) and DynamoDB request details.
func noParameters(context.Context, middleware.InitializeInput, middleware.InitializeOutput) []attribute.KeyValue {
	return nil
}

// ChildTracer returns the named tracer of t whose Start begins a span only
// under a recording parent in ctx and otherwise returns ctx and that parent
// unchanged, so an operation outside a work item starts no trace of its
// own. With t off it is a no-op tracer.
func (t *Tracing) ChildTracer(name string) trace.Tracer {
	if !t.Enabled() {
		return noop.NewTracerProvider().Tracer(name)
	}
	return childOnly{t.Provider}.Tracer(name)
}

// childOnly is a TracerProvider whose tracers start a span only under a
// recording parent, so that no AWS call outside a work item starts a
// trace of its own.
type childOnly struct{ trace.TracerProvider }

func (p childOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{Tracer: p.TracerProvider.Tracer(name, opts...)}
}

type childTracer struct {
	trace.Tracer
}

func (t childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return t.Tracer.Start(ctx, name, opts...)
}
