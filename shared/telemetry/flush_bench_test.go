package telemetry_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// BenchmarkFlush is one work item's tracing with MCPFN_TRACES=otlp: an
// item span and three MCP CLIENT spans with the conventions' attributes,
// ended, then Flush to a loopback OTLP/HTTP receiver; conns/op counts the
// receiver's new connections. "start" is Start's pipeline, "batch" the
// SDK's batch span processor over the same exporter, for comparison.
func BenchmarkFlush(b *testing.B) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"), attribute.String("mcp.protocol.version", "2025-11-25"),
		attribute.String("gen_ai.tool.name", "echo"), attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("jsonrpc.request.id", "2"), attribute.String("server.address", "127.0.0.1"),
		attribute.Int("server.port", 8080), attribute.String("network.protocol.name", "http"),
		attribute.String("network.protocol.version", "1.1"),
	}
	run := func(b *testing.B, tr *telemetry.Tracing) {
		defer func() { _ = tr.Shutdown(b.Context()) }()
		conns.Store(0)
		tracer := tr.Provider.Tracer("bench")
		b.ReportAllocs()
		for b.Loop() {
			ctx, item := tracer.Start(b.Context(), "call", trace.WithSpanKind(trace.SpanKindServer))
			for range 3 {
				_, s := tracer.Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
				s.End()
			}
			item.End()
			if err := tr.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/op")
	}
	b.Run("start", func(b *testing.B) {
		tr, err := telemetry.Start(b.Context(), telemetry.OTLP, "call", aws.Config{})
		if err != nil {
			b.Fatal(err)
		}
		run(b, tr)
	})
	b.Run("batch", func(b *testing.B) {
		exp, err := otlptracehttp.New(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		run(b, telemetry.NewTracing(sdktrace.NewBatchSpanProcessor(exp), "call"))
	})
}
