package schedule

import (
	"context"
	"sync"
	"time"
)

// sendGrace is how long sending and undoing run on after a sweep's context
// ends when Sweep is given no end.
const sendGrace = time.Second

// firstBatchEstimate is what a claim-and-send of ten is assumed to take
// before one was measured (at least twice the first Query): an SQS answer
// that takes longer is rare, and the first measure replaces it.
const firstBatchEstimate = 500 * time.Millisecond

// batchHeadroom is the factor on the slowest claim-and-send so far that a
// new one needs before the end: a send is started only when one twice as
// slow as any yet would still be answered and leave room for its undo.
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

// pace keeps, across a sweep's shards, the slowest claim-and-send of ten
// and the slowest claims of ten (what undoing them takes) measured so far.
type pace struct {
	mu            sync.Mutex
	batch, claims time.Duration
}

// first sets the estimates from the first Query's time, when nothing was
// measured yet: claims as long as the Query, a claim-and-send twice as
// long, at least firstBatchEstimate.
func (p *pace) first(query time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claims = max(p.claims, query)
	p.batch = max(p.batch, 2*query, firstBatchEstimate)
}

// measured records a claim-and-send that took batch, its claims claims.
func (p *pace) measured(batch, claims time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batch = max(p.batch, batch)
	p.claims = max(p.claims, claims)
}

// fits reports whether a claim-and-send may start now: ctx (the budget)
// has not ended, and batchHeadroom times the slowest claim-and-send plus
// the slowest claims (the undo) end before f's end, when that is known.
func (f *followUp) fits(ctx context.Context, p *pace) bool {
	if ctx.Err() != nil {
		return false
	}
	if f.end.IsZero() {
		return true
	}
	p.mu.Lock()
	need := batchHeadroom*p.batch + p.claims
	p.mu.Unlock()
	return time.Until(f.end) >= need
}
