package runner

import (
	"context"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/shared/wire"
)

// MBPerVCPU is the function memory, in MB, at which Lambda gives one whole
// vCPU; a function with MemorySize MB gets MemorySize/MBPerVCPU of one.
const MBPerVCPU = 1769

// cpuGate holds the CPU slots of Config.CPUSlots: the CPU-heavy part of a
// work item runs in one (Item.CPU). It learns, from what the items before
// held, how long one unit of their work takes, so that an item waiting
// behind others gives up as soon as its work could no longer finish.
type cpuGate struct {
	slots chan struct{}

	mu      sync.Mutex
	perUnit float64       // nanoseconds per unit of work held so far; 0: none measured
	changed chan struct{} // closed when perUnit changes
}

func newCPUGate(slots int) *cpuGate {
	if slots <= 0 {
		return nil
	}
	return &cpuGate{slots: make(chan struct{}, slots), changed: make(chan struct{})}
}

// need is how long work units are expected to take in a slot (0: unknown),
// and a channel closed when that estimate changes.
func (g *cpuGate) need(work int64) (time.Duration, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.perUnit * float64(work)), g.changed
}

// learn records that work units held a slot for held. An item cut off by
// its deadline did less than work in held, so the figure is a lower bound;
// the estimate never falls below the latest one.
func (g *cpuGate) learn(work int64, held time.Duration) {
	if work <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.perUnit = float64(held) / float64(work)
	close(g.changed)
	g.changed = make(chan struct{})
}

// errCPUBusy is the requeue error of an item whose CPU-heavy work cannot
// finish within its budget behind the items holding the CPU slots.
func errCPUBusy(need, left time.Duration) error {
	return &wire.Error{
		Type:    wire.Internal,
		Message: "requeued: the function's CPU share is busy with other work items; this one needs about " + need.Round(time.Millisecond).String() + " of it and has " + max(left, 0).Round(time.Millisecond).String() + " left",
		Requeue: true,
	}
}

// CPU takes one of the function's CPU slots (Config.CPUSlots) for work
// units of CPU-heavy work, in the processor's own measure (such as schema
// bytes to check), and returns its release, which the caller must call
// once. A free slot is always taken, so at least one item of a batch
// runs. Otherwise CPU waits, and returns an error marked Requeue (the
// record goes back to the queue) as soon as, at the time per unit this
// instance has measured, the work could no longer finish before
// it.Deadline or ctx ends. Without CPU slots it returns at once.
func (it *Item) CPU(ctx context.Context, work int64) (release func(), err error) {
	g := it.cpu
	if g == nil {
		return func() {}, nil
	}
	acquired := func() func() {
		start := time.Now()
		var once sync.Once
		return func() {
			once.Do(func() {
				g.learn(work, time.Since(start))
				<-g.slots
			})
		}
	}
	select {
	case g.slots <- struct{}{}:
		return acquired(), nil
	default:
	}
	for {
		need, changed := g.need(work)
		left := time.Until(it.Deadline)
		if need > 0 && need > left {
			return nil, errCPUBusy(need, left)
		}
		wait := time.NewTimer(max(left-need, 0))
		select {
		case g.slots <- struct{}{}:
			wait.Stop()
			if need, _ := g.need(work); need > 0 && need > time.Until(it.Deadline) {
				<-g.slots
				return nil, errCPUBusy(need, time.Until(it.Deadline))
			}
			return acquired(), nil
		case <-changed:
			wait.Stop()
		case <-wait.C:
			return nil, errCPUBusy(need, time.Until(it.Deadline))
		case <-ctx.Done():
			wait.Stop()
			return nil, errCPUBusy(need, time.Until(it.Deadline))
		}
	}
}
