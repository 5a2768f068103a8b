package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/shared/schedule"
)

// sweepOnce runs one sweep with budget and end measured from now, and
// fails the test when it errs or returns after end.
func sweepOnce(t *testing.T, mem *memTable, q schedule.QueueAPI, budget, end time.Duration) schedule.Swept {
	t.Helper()
	s := schedule.New(mem, "catalog", schedule.Options{})
	begin := time.Now()
	ctx, cancel := context.WithDeadline(t.Context(), begin.Add(budget))
	defer cancel()
	sw, err := s.Sweep(ctx, &schedule.Sender{API: q, URL: "queue"}, begin.Add(end))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > end {
		t.Errorf("the sweep took %s, past its end %s", took, end)
	}
	return sw
}

// checkOnceOrDue fails the test unless each of mem's n catalogs reached q
// exactly once or is still due, not both, and q holds want messages.
func checkOnceOrDue(t *testing.T, mem *memTable, q *slowSQS, n, want int) {
	t.Helper()
	total, arrived := q.count()
	if total != want {
		t.Errorf("%d messages reached the queue, want %d", total, want)
	}
	due := mem.stillDue(time.Now())
	for _, id := range due {
		if arrived[id] > 0 {
			t.Errorf("%s reached the queue and is still due", id)
		}
	}
	for id, c := range arrived {
		if c != 1 {
			t.Errorf("%s reached the queue %d times", id, c)
		}
	}
	if len(due)+len(arrived) != n {
		t.Errorf("%d due and %d enqueued, want %d together: claims were dropped", len(due), len(arrived), n)
	}
}

// TestSweepDoesNotCutOffAStartedSend: a 1 s budget, a second more to the
// end, and an SQS that answers in 50 ms until it suddenly takes 1 s. The
// sends started just before the budget ended are answered after it, not
// cut off: nothing is unanswered, Enqueued is what reached the queue, and
// no catalog is both enqueued and due.
func TestSweepDoesNotCutOffAStartedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		start := time.Now()
		mem := newMemTable(n, start, 5*time.Millisecond)
		var slow atomic.Int32
		q := &slowSQS{latencyAt: func(at time.Time) time.Duration {
			if at.Sub(start) < 850*time.Millisecond {
				return 50 * time.Millisecond
			}
			slow.Add(1)
			return time.Second
		}}
		sw := sweepOnce(t, mem, q, time.Second, 2*time.Second)
		if slow.Load() == 0 {
			t.Fatal("no send was under way when the budget ended")
		}
		if sw.Unanswered != 0 || q.cutOff != 0 {
			t.Errorf("%d unanswered, %d sends cut off; want none", sw.Unanswered, q.cutOff)
		}
		time.Sleep(2 * time.Second) // anything SQS took after its caller gave up arrives
		checkOnceOrDue(t, mem, q, n, sw.Enqueued)
	})
}

// TestSweepLeavesHeadroomForASlowerSend: a 3 s budget, half a second more
// to the end, an SQS taking 1 s. After two sends (at 0 s and 1 s) a third
// would still be answered by the end at the same pace, but not if it took
// twice as long: it is not started, and the sweep returns, incomplete,
// before its budget ends.
func TestSweepLeavesHeadroomForASlowerSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		mem := newMemTable(n, time.Now(), 5*time.Millisecond)
		q := &slowSQS{latency: time.Second}
		begin := time.Now()
		sw := sweepOnce(t, mem, q, 3*time.Second, 3500*time.Millisecond)
		if took := time.Since(begin); took >= 3*time.Second {
			t.Errorf("the sweep took %s: it sent on while a slower send would not fit", took)
		}
		if want := 2 * 8; q.calls != want || sw.Enqueued != 10*want || sw.Complete {
			t.Errorf("%d sends, swept %+v; want %d sends of ten, incomplete", q.calls, sw, want)
		}
		checkOnceOrDue(t, mem, q, n, sw.Enqueued)
	})
}

// TestSweepUndoesOnAFreshContextByTheEnd: SQS answers after the budget
// ended and refuses half of each batch. The refused claims are undone on
// a context whose deadline is the sweep's end, not the ended budget, and
// are due again.
func TestSweepUndoesOnAFreshContextByTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &memTable{latency: 5 * time.Millisecond, due: map[string]int64{}}
		now := time.Now().Unix()
		for i := range 200 {
			mem.due[fmt.Sprintf("ok-%03d", i)] = now - int64(i)
			mem.due[fmt.Sprintf("refuse-%03d", i)] = now - int64(i)
		}
		q := &slowSQS{latency: 1500 * time.Millisecond}
		end := time.Now().Add(2500 * time.Millisecond)
		sw := sweepOnce(t, mem, q, time.Second, 2500*time.Millisecond)
		if sw.Enqueued == 0 || sw.Enqueued == sw.Due {
			t.Fatalf("swept %+v, want some enqueued and some refused", sw)
		}
		if len(mem.undoDeadlines) != sw.Due-sw.Enqueued {
			t.Errorf("%d undos for %d claims not accepted", len(mem.undoDeadlines), sw.Due-sw.Enqueued)
		}
		for _, d := range mem.undoDeadlines {
			if !d.Equal(end) {
				t.Errorf("an undo ran on a context ending at %s, want the sweep's end %s", d, end)
			}
		}
		checkOnceOrDue(t, mem, q, len(mem.due), sw.Enqueued)
		for _, id := range mem.stillDue(time.Now()) {
			if !strings.HasPrefix(id, "refuse") && !strings.HasPrefix(id, "ok") {
				t.Errorf("unexpected %s", id)
			}
		}
		if due := mem.stillDue(time.Now()); len(due) != len(mem.due)-sw.Enqueued {
			t.Errorf("%d still due, want %d", len(due), len(mem.due)-sw.Enqueued)
		}
	})
}

// TestSweepKeepsTheClaimsOfUnansweredSends: an SQS slower than the time
// to the end. Every send is cut off by the end; SQS takes its messages
// afterwards. Their claims are kept (not undone): each catalog reached
// the queue once and is not due, and Unanswered counts them.
func TestSweepKeepsTheClaimsOfUnansweredSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		mem := newMemTable(n, time.Now(), 5*time.Millisecond)
		q := &slowSQS{latency: 5 * time.Second}
		sw := sweepOnce(t, mem, q, time.Second, 2*time.Second)
		if sw.Enqueued != 0 || sw.Unanswered == 0 || q.cutOff != q.calls {
			t.Errorf("swept %+v, %d of %d sends cut off; want every send cut off, unanswered, none enqueued", sw, q.cutOff, q.calls)
		}
		if len(mem.undoDeadlines) != 0 {
			t.Errorf("%d claims undone, want none: SQS may hold them", len(mem.undoDeadlines))
		}
		time.Sleep(5 * time.Second) // the cut-off sends land
		checkOnceOrDue(t, mem, q, n, sw.Unanswered)
	})
}

// failingSQS fails every SendMessageBatch with err.
type failingSQS struct {
	schedule.QueueAPI
	err error
}

func (f failingSQS) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return nil, f.err
}

// TestEnqueueTellsUnansweredFromRefused: a batch whose answer never came
// (its context ended, the connection broke) is ErrUnanswered; an error SQS
// answered, a connection never made and a context ended before sending
// are not.
func TestEnqueueTellsUnansweredFromRefused(t *testing.T) {
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		name       string
		ctx        context.Context
		err        error
		unanswered bool
	}{
		{"deadline", t.Context(), fmt.Errorf("operation error SQS: %w", context.DeadlineExceeded), true},
		{"connection reset", t.Context(), &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"SQS answered", t.Context(), &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"dial", t.Context(), &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"ended before sending", ended, context.Canceled, false},
	} {
		s := &schedule.Sender{API: failingSQS{err: c.err}, URL: "queue"}
		errs := s.Enqueue(c.ctx, []schedule.Request{{CatalogID: "a"}, {CatalogID: "b"}})
		for _, err := range errs {
			if err == nil || errors.Is(err, schedule.ErrUnanswered) != c.unanswered {
				t.Errorf("%s: %v, want unanswered %t", c.name, err, c.unanswered)
			}
		}
	}
}

// TestSweepStartsNoSendThatCannotFit: a due-index Query that takes 1.9 s
// of a 2 s budget, half a second more to the end. A claim-and-send is
// estimated at the Query's time plus half a second, which does not fit:
// nothing is claimed, everything stays due.
func TestSweepStartsNoSendThatCannotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		mem := newMemTable(n, time.Now(), 1900*time.Millisecond)
		q := &slowSQS{}
		sw := sweepOnce(t, mem, q, 2*time.Second, 2500*time.Millisecond)
		if sw.Due != 0 || sw.Complete || q.calls != 0 || len(mem.stillDue(time.Now())) != n {
			t.Errorf("swept %+v with %d sends, %d of %d still due; want nothing claimed", sw, q.calls, len(mem.stillDue(time.Now())), n)
		}
	})
}

// TestSweepCountsUndosThatFailed: SQS refuses every message and every
// undo fails: nothing is enqueued, each claim is counted Stranded (and as
// the SweepStranded metric), and each catalog waits one interval: the
// sweep an interval later enqueues them all.
func TestSweepCountsUndosThatFailed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 30
		mem := newMemTable(n, time.Now(), 10*time.Millisecond)
		mem.failUndo = true
		sw, err := schedule.New(mem, "catalog", schedule.Options{}).Sweep(t.Context(), &queue{fail: true}, time.Now().Add(time.Minute))
		if err != nil || sw.Enqueued != 0 || sw.Stranded != n || sw.Counts()[schedule.MetricStranded] != n {
			t.Fatalf("Sweep = %+v, %v; want %d stranded, none enqueued", sw, err, n)
		}
		if due := mem.stillDue(time.Now()); len(due) != 0 {
			t.Errorf("%d still due, want none (each stranded claim holds its catalog one interval)", len(due))
		}
		time.Sleep(time.Hour + time.Second)
		q := &queue{}
		sw, err = schedule.New(mem, "catalog", schedule.Options{}).Sweep(t.Context(), q, time.Now().Add(time.Minute))
		if got := len(q.take()); err != nil || sw.Enqueued != n || got != n || sw.Stranded != 0 {
			t.Errorf("an interval later: %+v, %v, %d sent; want all %d enqueued", sw, err, got, n)
		}
	})
}
