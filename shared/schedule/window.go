package schedule

import (
	"context"
	"sync"
	"time"
)

// sendGrace is how long sending and undoing run on after a sweep's context
// ends when Sweep is given no end.
const sendGrace = time.Second

// firstSendEstimate is what one SendMessageBatch is assumed to take
// before a claim-and-send was measured: SQS answers in tens of
// milliseconds, so this is a conservative guess, used as is.
const firstSendEstimate = 500 * time.Millisecond

// batchHeadroom is the factor on the slowest claim-and-send measured so
// far that a new one needs before the end: a send is started only when
// one twice as slow as any yet would still be answered and leave room for
// its undo.
const batchHeadroom = 2

// followUp is the context that outlives a sweep's context: it keeps that
// context's values and ends at the sweep's end (or, with no end and no
// deadline, sendGrace after the sweep's context ends). Sends and undos run
// on it, never on the sweep's context.
type followUp struct {
	ctx  context.Context
	end  time.Time // zero: unknown until the sweep's context ends
	stop func()
}

func newFollowUp(ctx context.Context, end time.Time) *followUp {
	base := context.WithoutCancel(ctx)
	if end.IsZero() {
		if d, ok := ctx.Deadline(); ok {
			end = d.Add(sendGrace)
		}
	}
	if !end.IsZero() {
		c, cancel := context.WithDeadline(base, end)
		return &followUp{ctx: c, end: end, stop: cancel}
	}
	c, cancel := context.WithCancel(base)
	var (
		mu      sync.Mutex
		stopped bool
		timer   *time.Timer
	)
	after := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(sendGrace, cancel)
		}
	})
	return &followUp{ctx: c, stop: func() {
		after()
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}}
}

// pace keeps, across a sweep's shards, what a claim-and-send of ten needs
// before the end: the slowest claim-and-send measured so far (batch) with
// batchHeadroom, at least the first estimate (first), plus the slowest
// claims of ten (what undoing them takes).
type pace struct {
	mu                   sync.Mutex
	batch, first, claims time.Duration
}

// estimate sets the first estimates from a Query that took query: claims
// as long as the Query, a claim-and-send that plus firstSendEstimate.
func (p *pace) estimate(query time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claims = max(p.claims, query)
	p.first = max(p.first, query+firstSendEstimate)
}

// measured records a claim-and-send that took batch, its claims claims.
func (p *pace) measured(batch, claims time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batch = max(p.batch, batch)
	p.claims = max(p.claims, claims)
}

// need is how long before the end a claim-and-send may start.
func (p *pace) need() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(batchHeadroom*p.batch, p.first) + p.claims
}

// fits reports whether a claim-and-send may start now: ctx (the budget)
// has not ended, and p's need ends before f's end, when that is known.
func (f *followUp) fits(ctx context.Context, p *pace) bool {
	if ctx.Err() != nil {
		return false
	}
	return f.end.IsZero() || time.Until(f.end) >= p.need()
}
