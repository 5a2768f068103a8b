package telemetry

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// MaxHeldSpans bounds the spans a flushProcessor holds between flushes;
// it drops the spans that end beyond it (the batch processor's queue
// size).
const MaxHeldSpans = sdktrace.DefaultMaxQueueSize

// flushProcessor holds ended, sampled spans until ForceFlush exports them
// in one request. It starts no goroutine of its own: the spans of a work
// item are exported when the runner flushes before answering, which is
// the only time a Lambda function may send anything. Safe for concurrent
// use; concurrent flushes export disjoint sets.
type flushProcessor struct {
	exp sdktrace.SpanExporter

	mu    sync.Mutex
	held  []sdktrace.ReadOnlySpan
	spare []sdktrace.ReadOnlySpan // an exported batch's array, for reuse
}

func newFlushProcessor(exp sdktrace.SpanExporter) *flushProcessor {
	return &flushProcessor{exp: exp}
}

func (p *flushProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (p *flushProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	p.mu.Lock()
	if len(p.held) < MaxHeldSpans {
		p.held = append(p.held, s)
	}
	p.mu.Unlock()
}

// ForceFlush exports the spans held so far, returning the exporter's
// error, or ctx's when ctx ends first (the batch is then dropped).
func (p *flushProcessor) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	batch := p.held
	p.held, p.spare = p.spare[:0], nil
	p.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		err := p.exp.ExportSpans(ctx, batch)
		clear(batch)
		p.mu.Lock()
		if p.spare == nil {
			p.spare = batch[:0]
		}
		p.mu.Unlock()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown flushes, then shuts the exporter down.
func (p *flushProcessor) Shutdown(ctx context.Context) error {
	err := p.ForceFlush(ctx)
	if serr := p.exp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}
