package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recordingExporter records each export's span names; block, when set,
// holds every export until it is closed, ignoring the context.
type recordingExporter struct {
	block chan struct{}

	mu      sync.Mutex
	exports [][]string
}

func (e *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.block != nil {
		<-e.block
		return errors.New("late")
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exports = append(e.exports, names)
	return nil
}

func (*recordingExporter) Shutdown(context.Context) error { return nil }

// TestFlushProcessor: ended sampled spans are held until ForceFlush, which
// exports them once in one request; an unsampled span is not exported; at
// most MaxHeldSpans are held.
func TestFlushProcessor(t *testing.T) {
	exp := &recordingExporter{}
	tr := NewTracing(newFlushProcessor(exp), "call")
	tracer := tr.Provider.Tracer("test")
	ctx, item := tracer.Start(t.Context(), "item")
	_, child := tracer.Start(ctx, "child")
	child.End()
	item.End()
	if len(exp.exports) != 0 {
		t.Fatalf("exported before the flush: %v", exp.exports)
	}
	for range 2 {
		if err := tr.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if len(exp.exports) != 1 || len(exp.exports[0]) != 2 || exp.exports[0][0] != "child" || exp.exports[0][1] != "item" {
		t.Errorf("exports %v, want one of [child item]", exp.exports)
	}

	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(newFlushProcessor(exp)))
	_, s := unsampled.Tracer("test").Start(t.Context(), "unsampled")
	s.End()
	if err := unsampled.ForceFlush(t.Context()); err != nil || len(exp.exports) != 1 {
		t.Errorf("an unsampled span: flush %v, exports %v", err, exp.exports)
	}

	for range MaxHeldSpans + 5 {
		_, s := tracer.Start(t.Context(), "many")
		s.End()
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(exp.exports[len(exp.exports)-1]); got != MaxHeldSpans {
		t.Errorf("exported %d spans, want at most MaxHeldSpans (%d)", got, MaxHeldSpans)
	}
}

// TestFlushProcessorConcurrent: spans ending and flushes from many
// goroutines export every span exactly once.
func TestFlushProcessorConcurrent(t *testing.T) {
	exp := &recordingExporter{}
	tr := NewTracing(newFlushProcessor(exp), "call")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, s := tr.Provider.Tracer("test").Start(t.Context(), "s")
				s.End()
				if err := tr.Flush(t.Context()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for _, e := range exp.exports {
		n += len(e)
	}
	if n != 400 {
		t.Errorf("%d spans exported, want 400", n)
	}
}

// TestFlushProcessorBounded: an export that never returns, even ignoring
// its context, costs a flush DefaultFlushTimeout and no more.
func TestFlushProcessorBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := &recordingExporter{block: make(chan struct{})}
		defer close(exp.block)
		tr := NewTracing(newFlushProcessor(exp), "call")
		_, s := tr.Provider.Tracer("test").Start(t.Context(), "item")
		s.End()
		start := time.Now()
		err := tr.Flush(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != DefaultFlushTimeout {
			t.Errorf("Flush = %v after %s, want the deadline after %s", err, time.Since(start), DefaultFlushTimeout)
		}
	})
}
