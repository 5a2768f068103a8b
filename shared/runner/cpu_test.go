package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// cpuWork is a body for cpuRunner's processor: units of CPU-heavy work,
// each taking 10 ms in a CPU slot.
func cpuWork(units int) string { return fmt.Sprintf(`{"units":%d}`, units) }

// cpuRunner is a runner with cpuSlots whose processor takes a CPU slot for
// the body's units and holds it 10 ms a unit, as a schema check at a
// fixed CPU share would. It records when each item's CPU call returned.
func cpuRunner(t *testing.T, cpuSlots int, logs *runnertest.Lines) (*runner.Runner, *sync.Map) {
	t.Helper()
	returned := &sync.Map{} // item id → time.Duration since the start
	start := time.Now()
	r, err := runner.NewRunner(runner.Config{
		Function: "test", CPUSlots: cpuSlots, OperationTimeout: 2 * time.Minute,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: &runnertest.Lines{},
	}, runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
		var w struct{ Units int }
		if err := json.Unmarshal(it.Body, &w); err != nil {
			return nil, err
		}
		octx, cancel := it.OperationContext(ctx)
		defer cancel()
		release, err := it.CPU(octx, int64(w.Units))
		returned.Store(it.ID, time.Since(start))
		if err != nil {
			return nil, err
		}
		defer release()
		select {
		case <-time.After(time.Duration(w.Units) * 10 * time.Millisecond):
			return "ok", nil
		case <-octx.Done():
			return nil, wire.Errorf(wire.ProtocolError, octx.Err(), "checking ran out of time")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	return r, returned
}

// TestCPUSlotsLetABatchFinish: ten records each needing 29 s of the one
// CPU slot, with 2-minute budgets. Sized by memory alone all ten would
// share the CPU and none finish; with a CPU slot four finish in turn (the
// fourth from 87 s to 116 s) and the other six are requeued as soon as the
// measured cost shows they cannot finish (at 91 s, 120 − 29), not at the
// end of their budget.
func TestCPUSlotsLetABatchFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &runnertest.Lines{}
		r, returned := cpuRunner(t, 1, logs)
		var bodies []string
		for range 10 {
			bodies = append(bodies, cpuWork(2900))
		}
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 15*time.Minute)
		defer cancel()
		if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...))); err != nil {
			t.Fatal(err)
		}
		outcomes := map[string]int{}
		for _, s := range logs.Summaries() {
			outcomes[fmt.Sprint(s["outcome"])]++
			if s["outcome"] == "requeued" {
				if at, _ := returned.Load(s["work_item"]); at.(time.Duration) != 91*time.Second {
					t.Errorf("%s was requeued at %s, want 1m31s: when the 29 s it needs no longer fits", s["work_item"], at)
				}
			}
		}
		if want := map[string]int{"succeeded": 4, "requeued": 6}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
			t.Errorf("outcomes %v, want %v", outcomes, want)
		}
	})
}

// TestCPUFreeSlotIsAlwaysTaken: an item that finds a slot free runs even
// when the cost measured so far says it cannot finish, so every delivery
// makes progress; the others wait behind it.
func TestCPUFreeSlotIsAlwaysTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &runnertest.Lines{}
		r, _ := cpuRunner(t, 1, logs)
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 15*time.Minute)
		defer cancel()
		// Teach the gate 10 ms a unit.
		if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(cpuWork(100)))); err != nil {
			t.Fatal(err)
		}
		// 20,000 units need 200 s, over the 2-minute budget; the slot is free.
		if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(cpuWork(20000)))); err != nil {
			t.Fatal(err)
		}
		s := logs.Summaries()
		if len(s) != 2 || s[0]["outcome"] != "succeeded" || s[1]["error_type"] != "mcp_protocol_error" {
			t.Errorf("summaries %v, want the second item started and cut off by its own budget", s)
		}
	})
}

// TestCPUWithoutAnEstimateWaitsItsBudget: before any item has held a slot
// there is no estimate, so a waiter waits while its budget lasts.
func TestCPUWithoutAnEstimateWaitsItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &runnertest.Lines{}
		r, returned := cpuRunner(t, 1, logs)
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 15*time.Minute)
		defer cancel()
		// One holds the slot past its budget; the other waits for it.
		if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(cpuWork(15000), cpuWork(15000)))); err != nil {
			t.Fatal(err)
		}
		var got []time.Duration
		for _, id := range []string{"msg-0", "msg-1"} {
			at, _ := returned.Load(id)
			got = append(got, at.(time.Duration))
		}
		if min(got[0], got[1]) != 0 || max(got[0], got[1]) != 2*time.Minute {
			t.Errorf("the items got the CPU or gave up at %v, want one at once and the other at its deadline (2m0s)", got)
		}
		for _, s := range logs.Summaries() {
			if s["outcome"] != "requeued" {
				t.Errorf("%s: %v, want requeued", s["work_item"], s["outcome"])
			}
		}
	})
}

// TestCPUWithoutSlotsIsFree: with no CPU slots configured, CPU never waits.
func TestCPUWithoutSlotsIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &runnertest.Lines{}
		r, returned := cpuRunner(t, 0, logs)
		ctx, cancel := runnertest.Context(t.Context(), "req-1", 15*time.Minute)
		defer cancel()
		if _, err := r.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(cpuWork(3000), cpuWork(3000), cpuWork(3000)))); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"msg-0", "msg-1", "msg-2"} {
			if at, _ := returned.Load(id); at.(time.Duration) != 0 {
				t.Errorf("%s got the CPU at %s, want at once", id, at)
			}
		}
	})
}
