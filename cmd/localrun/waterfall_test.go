package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestWaterfall: a trace prints as one line per span, children indented
// under their parent in start order, each bar placed on the trace's time
// line, an error marked with its error.type; a span whose parent is not in
// the trace (the caller's) is a root.
func TestWaterfall(t *testing.T) {
	at := uint64(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC).UnixNano())
	ms := uint64(time.Millisecond)
	span := func(id, parent byte, name string, from, to uint64) *tracepb.Span {
		s := &tracepb.Span{TraceId: []byte{15: 1}, SpanId: []byte{7: id}, Name: name, StartTimeUnixNano: at + from*ms, EndTimeUnixNano: at + to*ms}
		if parent != 0 {
			s.ParentSpanId = []byte{7: parent}
		}
		return s
	}
	root := span(1, 9, "call", 0, 100) // parent 9: the caller's, not exported
	failed := span(3, 1, "tools/call echo", 50, 100)
	failed.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "tool_error"}
	failed.Attributes = []*commonpb.KeyValue{{Key: "error.type", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "tool_error"}}}}
	var b strings.Builder
	writeWaterfall(&b, []*tracepb.Span{failed, span(2, 1, "Secrets Manager.GetSecretValue", 0, 10), root})
	got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	bar := func(from, n int) string {
		return "|" + strings.Repeat(" ", from) + strings.Repeat("█", n) + strings.Repeat(" ", barWidth-from-n) + "|"
	}
	want := []string{
		"  trace 00000000000000000000000000000001 (100.0 ms)",
		"    call" + strings.Repeat(" ", 40) + "  100.0 ms " + bar(0, 40),
		"      Secrets Manager.GetSecretValue" + strings.Repeat(" ", 12) + "   10.0 ms " + bar(0, 4),
		"      tools/call echo" + strings.Repeat(" ", 27) + "   50.0 ms " + bar(20, 20) + " ✗ tool_error",
	}
	if len(got) != len(want) {
		t.Fatalf("waterfall:\n%s\nwant %d lines", b.String(), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

// TestTraceReceiver: spans an OTLP/HTTP exporter sends to the receiver
// are what take returns, once.
func TestTraceReceiver(t *testing.T) {
	r, err := startTraceReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(r.url+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, s := tp.Tracer("test").Start(context.Background(), "work item")
	s.SetStatus(codes.Error, "x")
	s.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := r.take()
	if len(got) != 1 || got[0].Name != "work item" || got[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("take = %v, want the one span", got)
	}
	if again := r.take(); len(again) != 0 {
		t.Errorf("second take = %v, want nothing", again)
	}
	if env := strings.Join(r.env(), " "); !strings.Contains(env, "MCPFN_TRACES=otlp") || !strings.Contains(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+r.url) {
		t.Errorf("env = %s", env)
	}
}
