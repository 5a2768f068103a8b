package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpfn/mcpfn/shared/telemetry"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want telemetry.Mode
		err  bool
	}{
		{in: "", want: telemetry.Off},
		{in: "off", want: telemetry.Off},
		{in: "otlp", want: telemetry.OTLP},
		{in: "xray", want: telemetry.XRay},
		{in: "OTLP", err: true},
		{in: "on", err: true},
	}
	for _, tt := range tests {
		got, err := telemetry.ParseMode(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, telemetry.ErrMode) {
			t.Errorf("ParseMode(%q) error %v does not wrap ErrMode", tt.in, err)
		}
	}
}

// TestOffCostsNothing: off is a no-op provider whose spans record nothing,
// and Flush returns at once.
func TestOffCostsNothing(t *testing.T) {
	tr, err := telemetry.Start(t.Context(), telemetry.Off, "call", aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Error("off: Enabled() = true")
	}
	_, span := tr.Provider.Tracer("x").Start(t.Context(), "s")
	if span.IsRecording() {
		t.Error("off: the span records")
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Errorf("off: Flush = %v", err)
	}
	var zero *telemetry.Tracing
	if zero.Enabled() || zero.Flush(t.Context()) != nil || zero.Shutdown(t.Context()) != nil {
		t.Error("a nil Tracing is not off")
	}
}

// TestOTLPSamplesEverything: without OTEL_TRACES_SAMPLER every span is
// sampled; the service name is the resource's.
func TestOTLPSamplesEverything(t *testing.T) {
	t.Setenv(telemetry.EnvSampler, "")
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.NewTracing(rec, "discover")
	_, span := tr.Provider.Tracer("x").Start(t.Context(), "s")
	span.End()
	ended := rec.Ended()
	if len(ended) != 1 || !ended[0].SpanContext().IsSampled() {
		t.Fatalf("ended = %v, want one sampled span", ended)
	}
	if got, _ := ended[0].Resource().Set().Value("service.name"); got.AsString() != "discover" {
		t.Errorf("service.name = %v, want discover", got)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}

// TestExportIsNotRetried: an OTLP export the collector answers 503 fails
// the flush with that answer at once, not after waiting out the flush
// timeout for a retry; the next flush sends the next spans only.
func TestExportIsNotRetried(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if requests.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tr, err := telemetry.Start(t.Context(), telemetry.OTLP, "call", aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(t.Context()) }()
	for i, want := range []string{"busy", ""} {
		_, span := tr.Provider.Tracer("x").Start(t.Context(), "s")
		span.End()
		err := tr.Flush(t.Context())
		if got := fmt.Sprint(err); want == "" && err != nil || want != "" && (!strings.Contains(got, want) || errors.Is(err, context.DeadlineExceeded)) {
			t.Errorf("flush %d = %v, want %q", i, err, want)
		}
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d export requests, want 2", n)
	}
}
