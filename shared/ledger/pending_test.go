package ledger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/ledger"
)

var pending = ledger.Pending{
	Tool: "task_sleep", ArgsDigest: "sha256:00", TaskID: "task-1", Version: "2026-07-28",
	PollAfter: 15, ExpiresAt: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), OpenInputs: []string{"name"}, Rounds: 1,
	Answer: json.RawMessage(`{"type":"mcp_call_pending","status":"working","poll_after_seconds":15}`),
}

func TestSuspendedCallIsContinued(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		mustBegin(t, l[0], "long", ledger.Entry{})
		if err := l[0].Suspend(t.Context(), "long", pending); err != nil {
			t.Fatalf("Suspend: %v", err)
		}
		wantErr(t, "Suspend after the lease ended", l[0].Suspend(t.Context(), "long", pending), ledger.ErrNotOwner)
		p := pending
		mustBegin(t, l[1], "long", ledger.Entry{Pending: &p})
		if err := l[1].Complete(t.Context(), "long", outcome); err != nil {
			t.Fatalf("Complete of the continuation: %v", err)
		}
		mustBegin(t, l[0], "long", ledger.Entry{Done: true, Outcome: outcome})
	})
}

func TestConcurrentContinuationsOneProceeds(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		const n = 6
		clk := newClock()
		l := s.new(t, clk, n)
		mustBegin(t, l[0], "poll", ledger.Entry{})
		if err := l[0].Suspend(t.Context(), "poll", pending); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		entries := make([]ledger.Entry, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				entries[i], errs[i] = l[i].Begin(t.Context(), "poll")
			})
		}
		close(start)
		wg.Wait()
		proceeded := 0
		for i, err := range errs {
			var busy *ledger.InProgressError
			switch {
			case err == nil && entries[i].Pending != nil:
				proceeded++
			case errors.As(err, &busy):
				if left := busy.Until.Sub(clk.Now()); left <= 0 || left > lease {
					t.Errorf("ledger %d: lease left %v, want within (0, %v]", i, left, lease)
				}
			default:
				t.Errorf("ledger %d: Begin = %+v, %v", i, entries[i], err)
			}
		}
		if proceeded != 1 {
			t.Errorf("%d of %d concurrent continuations proceeded, want exactly 1", proceeded, n)
		}
	})
}

func TestContinuationLeaseReleaseAndExpiryKeepThePendingState(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		clk := newClock()
		l := s.new(t, clk, 3)
		mustBegin(t, l[0], "k", ledger.Entry{})
		if err := l[0].Suspend(t.Context(), "k", pending); err != nil {
			t.Fatal(err)
		}
		p := pending
		mustBegin(t, l[1], "k", ledger.Entry{Pending: &p})
		if err := l[1].Release(t.Context(), "k"); err != nil {
			t.Fatalf("Release of a continuation: %v", err)
		}
		mustBegin(t, l[2], "k", ledger.Entry{Pending: &p}) // still pending, not gone

		clk.Advance(lease) // l[2] died holding the lease
		mustBegin(t, l[0], "k", ledger.Entry{Pending: &p, TookOver: true})
		wantErr(t, "Complete by the expired holder", l[2].Complete(t.Context(), "k", outcome), ledger.ErrNotOwner)
	})
}

func TestPendingTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 1)
		mustBegin(t, l[0], "big", ledger.Entry{})
		p := pending
		p.RequestState = strings.Repeat("s", ledger.MaxOutcomeBytes)
		wantErr(t, "Suspend of an oversized state", l[0].Suspend(t.Context(), "big", p), ledger.ErrTooLarge)
		if err := l[0].Release(t.Context(), "big"); err != nil {
			t.Fatalf("Release after ErrTooLarge: %v", err)
		}
	})
}
