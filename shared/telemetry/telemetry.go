// Package telemetry sets up the functions' OpenTelemetry traces: off (the
// default, a no-op tracer provider and no exporter) or exported over
// OTLP/HTTP, configured by the standard OTEL_EXPORTER_OTLP_* variables, to
// a collector (otlp) or to the regional X-Ray endpoint, SigV4-signed (xray).
// Design notes: DESIGN.md; operations: docs/operations.md, "Traces".
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// EnvTraces is the setting that chooses the Mode.
const EnvTraces = "MCPFN_TRACES"

// Mode is where spans go.
type Mode string

// Modes: XRay is OTLP to the regional X-Ray endpoint, SigV4-signed.
const (
	Off  Mode = "off"
	OTLP Mode = "otlp"
	XRay Mode = "xray"
)

// ErrMode is wrapped by every ParseMode error.
var ErrMode = errors.New("want off, otlp, xray or nothing")

// ParseMode reads EnvTraces' value: "" and "off" are Off, "otlp" is OTLP,
// "xray" is XRay. Anything else is ErrMode.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Off:
		return Off, nil
	case OTLP, XRay:
		return Mode(s), nil
	}
	return "", ErrMode
}

// Envs the SDK reads for sampling; without EnvSampler, Start samples every
// work item (see DESIGN.md).
const EnvSampler = "OTEL_TRACES_SAMPLER"

// Tracing is the functions' tracer provider and how to flush it. The zero
// value and Start(ctx, Off, …) are off: a no-op provider, and Flush and
// Shutdown return nil at once. Safe for concurrent use.
type Tracing struct {
	Provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when off
}

// Start returns the Tracing of mode for the named service. OTLP holds
// the ended spans until Flush sends them in one OTLP/HTTP request, not
// retried; the exporter reads OTEL_EXPORTER_OTLP_* (the endpoint, headers,
// timeout). XRay does the same to XRayEndpoint of awsCfg's region (unless
// those variables name an endpoint), each request SigV4-signed with
// awsCfg's credentials; without a region it fails with ErrNoRegion. Start
// dials nothing until the first export.
func Start(ctx context.Context, mode Mode, service string, awsCfg aws.Config) (*Tracing, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
	switch mode {
	case OTLP:
	case XRay:
		xopts, err := xrayOptions(awsCfg)
		if err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		opts = append(opts, xopts...)
	default:
		return &Tracing{Provider: noop.NewTracerProvider()}, nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	return NewTracing(newFlushProcessor(exp), service), nil
}

// NewTracing returns an exporting Tracing whose spans go to sp (tests pass
// a tracetest.SpanRecorder or a simple processor).
func NewTracing(sp sdktrace.SpanProcessor, service string) *Tracing {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSpanProcessor(sp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service), semconv.FaaSName(os.Getenv("AWS_LAMBDA_FUNCTION_NAME")))),
	}
	if os.Getenv(EnvSampler) == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.AlwaysSample()))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracing{Provider: tp, sdk: tp}
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// DefaultFlushTimeout bounds Flush when ctx has a later deadline.
const DefaultFlushTimeout = time.Second

// Flush exports every ended span within ctx and DefaultFlushTimeout. It
// returns the exporter's error, or ctx's when the time ran out.
func (t *Tracing) Flush(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultFlushTimeout)
	defer cancel()
	return t.sdk.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter within ctx.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}
