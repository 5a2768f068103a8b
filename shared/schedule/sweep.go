package schedule

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// Enqueuer sends discover requests to the discover queue. It returns one
// error per request, nil for each one sent.
type Enqueuer interface {
	Enqueue(ctx context.Context, reqs []Request) []error
}

// Swept is what one sweep did. Due counts the index entries it found due
// (next_due <= now); Enqueued those it claimed and the queue accepted;
// BackingOff those it skipped because a failure streak's retry_after is
// later (it moved their next_due there). The rest of Due were claimed
// meanwhile by another sweep, or not sent (their claim is undone).
// Overdue3x counts the due entries at least three intervals stale:
// next_due more than three intervals past, or two failures or more in a
// row. Complete is false when the context ended before every page was
// read; the rest stay due.
type Swept struct {
	Due        int  `json:"due"`
	Enqueued   int  `json:"enqueued"`
	BackingOff int  `json:"backing_off"`
	Overdue3x  int  `json:"-"`
	Complete   bool `json:"-"`
}

func (s *Swept) add(o Swept) {
	s.Due += o.Due
	s.Enqueued += o.Enqueued
	s.BackingOff += o.BackingOff
	s.Overdue3x += o.Overdue3x
}

// sendBatch is how many due entries a shard claims at once, and so the
// most claimed catalogs that go to the Enqueuer at once: one SQS
// SendMessageBatch.
const sendBatch = 10

// Sweep finds the catalogs due now and enqueues a discover request for
// each to q, exactly once per interval: it Queries each of the
// catalog.DueShards partitions of the due index (next_due <= now, PageSize
// items a page), the shards in parallel, and claims each entry with an
// UpdateItem conditional on the next_due the index returned, which moves
// next_due one interval on. A backing-off entry's next_due moves to its
// retry_after instead. A shard claims sendBatch entries at once, in
// parallel, and sends them; it starts the next sendBatch only while the
// time sends may take leaves room for its slowest claim-and-send so far
// (before the first, twice its Query), so that as a rule each send is
// answered.
//
// ctx bounds claiming; end (the invocation's deadline; zero: sendGrace
// after ctx ends) bounds what follows. When ctx ends the sweep claims
// nothing more, sends what it claimed for three quarters of the time from
// ctx's end to end, and undoes every claim not sent by end. It returns
// Complete false then, no error; an error is a DynamoDB failure other than
// a lost claim.
func (t *Table) Sweep(ctx context.Context, q Enqueuer, end time.Time) (Swept, error) {
	now := t.opts.Now()
	f := newFollowUp(ctx, end)
	defer f.stop()
	results := make([]Swept, catalog.DueShards)
	errs := make([]error, catalog.DueShards)
	var wg sync.WaitGroup
	for i := range catalog.DueShards {
		wg.Go(func() { results[i], errs[i] = t.sweepShard(ctx, f, q, strconv.Itoa(i), now) })
	}
	wg.Wait()
	total := Swept{Complete: true}
	for i, r := range results {
		total.add(r)
		total.Complete = total.Complete && r.Complete
		if errs[i] != nil {
			return total, errs[i]
		}
	}
	return total, nil
}

// entry is one due index entry.
type entry struct {
	req        Request
	nextDue    int64
	interval   time.Duration
	failures   int64
	retryAfter int64
}

func (t *Table) sweepShard(ctx context.Context, f *followUp, q Enqueuer, shard string, now time.Time) (Swept, error) {
	var sw Swept
	var start map[string]types.AttributeValue
	var slowest time.Duration // the longest claimAndSend so far; at first, two Queries
	for {
		if ctx.Err() != nil {
			return sw, nil
		}
		asked := time.Now()
		out, err := t.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(t.table),
			IndexName:                aws.String(catalog.DueIndex),
			KeyConditionExpression:   aws.String("#ds = :ds AND #nd <= :now"),
			ExpressionAttributeNames: map[string]string{"#ds": catalog.DueShardAttribute, "#nd": catalog.NextDueAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":ds":  &types.AttributeValueMemberS{Value: shard},
				":now": num(now.Unix()),
			},
			Limit:             aws.Int32(t.opts.PageSize),
			ExclusiveStartKey: start,
		})
		if err != nil {
			if ctx.Err() != nil {
				return sw, nil
			}
			return sw, fmt.Errorf("schedule: query due shard %s: %w", shard, err)
		}
		if slowest == 0 {
			slowest = 2 * time.Since(asked) // two round trips: the claims, the send
		}
		for lo := 0; lo < len(out.Items); lo += sendBatch {
			if !f.fits(ctx, slowest) {
				return sw, nil // the rest stay due
			}
			began := time.Now()
			g, err := t.claimAndSend(ctx, f, q, out.Items[lo:min(lo+sendBatch, len(out.Items))], now)
			sw.add(g)
			slowest = max(slowest, time.Since(began))
			if err != nil {
				return sw, err
			}
		}
		if ctx.Err() != nil {
			return sw, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			sw.Complete = true
			return sw, nil
		}
		start = out.LastEvaluatedKey
	}
}

// claimAndSend claims the due entries items (at most sendBatch) in
// parallel, or moves them to their retry_after, sends the claimed ones and
// undoes each claim it could not send or that failed (it may have landed).
// An error is a DynamoDB failure other than a lost claim.
func (t *Table) claimAndSend(ctx context.Context, f *followUp, q Enqueuer, items []map[string]types.AttributeValue, now time.Time) (Swept, error) {
	type result struct {
		e              entry
		next           int64
		backingOff, ok bool
		err            error
	}
	res := make([]result, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		r := &res[i]
		r.e = readEntry(item)
		r.next, r.backingOff = now.Add(r.e.interval).Unix(), r.e.retryAfter > now.Unix()
		if r.backingOff {
			r.next = r.e.retryAfter
		}
		wg.Go(func() { r.ok, r.err = t.move(ctx, r.e, r.next) })
	}
	wg.Wait()
	var sw Swept
	var claimed, lost []claim
	var stop error
	for _, r := range res {
		sw.Due++
		if r.e.overdue3x(now) {
			sw.Overdue3x++
		}
		c := claim{req: r.e.req, seen: r.e.nextDue, wrote: r.next}
		switch {
		case r.err != nil:
			if ctx.Err() == nil && stop == nil {
				stop = r.err
			}
			if !r.backingOff {
				lost = append(lost, c)
			}
		case r.ok && r.backingOff:
			sw.BackingOff++
		case r.ok:
			claimed = append(claimed, c)
		}
	}
	sw.Enqueued = t.send(f, q, claimed, lost)
	return sw, stop
}

// fits reports whether a claim-and-send that takes d, started now, is
// answered before f.send ends: ctx has not ended and the send's end, as
// far as it is known, is at least d away.
func (f *followUp) fits(ctx context.Context, d time.Duration) bool {
	return ctx.Err() == nil && (f.sendBy.IsZero() || time.Until(f.sendBy) >= d)
}

// send enqueues the claimed catalogs on f.send, undoes on f.undo (in
// parallel) the claim of each one q did not accept or was not given and of
// each lost one, and returns how many q accepted.
func (t *Table) send(f *followUp, q Enqueuer, claimed, lost []claim) int {
	undo := lost
	sent := 0
	if len(claimed) > 0 {
		var errs []error
		if f.send.Err() == nil {
			reqs := make([]Request, len(claimed))
			for j, c := range claimed {
				reqs[j] = c.req
			}
			errs = q.Enqueue(f.send, reqs)
		}
		for j, c := range claimed {
			if j < len(errs) && errs[j] == nil {
				sent++
				continue
			}
			undo = append(undo, c)
		}
	}
	var wg sync.WaitGroup
	for _, c := range undo {
		wg.Go(func() { t.unclaim(f.undo, c) })
	}
	wg.Wait()
	return sent
}

// sendGrace is how long sending and undoing run on after a sweep's context
// ends when Sweep is given no end.
const sendGrace = time.Second

// followUp holds the contexts that outlive a sweep's context: send ends
// three quarters of the way from the sweep context's end to end, undo at
// end. Both keep the sweep context's values.
type followUp struct {
	send, undo context.Context
	sendBy     time.Time // when send ends if ctx ends at its deadline; zero: unknown
	stop       func()
}

func newFollowUp(ctx context.Context, end time.Time) *followUp {
	base := context.WithoutCancel(ctx)
	send, cancelSend := context.WithCancel(base)
	undo, cancelUndo := context.WithCancel(base)
	var (
		mu      sync.Mutex
		stopped bool
		timers  []*time.Timer
	)
	after := context.AfterFunc(ctx, func() {
		w := sendGrace
		if !end.IsZero() {
			w = time.Until(end)
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timers = append(timers, time.AfterFunc(w*3/4, cancelSend), time.AfterFunc(w, cancelUndo))
		}
	})
	var sendBy time.Time
	if d, ok := ctx.Deadline(); ok {
		w := sendGrace
		if !end.IsZero() {
			w = end.Sub(d)
		}
		sendBy = d.Add(w * 3 / 4)
	}
	return &followUp{send: send, undo: undo, sendBy: sendBy, stop: func() {
		after()
		mu.Lock()
		stopped = true
		for _, tm := range timers {
			tm.Stop()
		}
		mu.Unlock()
		cancelSend()
		cancelUndo()
	}}
}

// move sets e's next_due to next if it is still the one the index
// returned; ok false means another writer (a sweep, a discovery, taking
// it off the schedule) changed it first.
func (t *Table) move(ctx context.Context, e entry, next int64) (bool, error) {
	_, err := t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       headKey(e.req.CatalogID),
		UpdateExpression:          aws.String("SET #nd = :next"),
		ConditionExpression:       aws.String("#nd = :seen"),
		ExpressionAttributeNames:  map[string]string{"#nd": catalog.NextDueAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":next": num(next), ":seen": num(e.nextDue)},
	})
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("schedule: claim %q: %w", e.req.CatalogID, err)
	}
	return true, nil
}

// claim is a catalog a sweep claimed: next_due moved from seen to wrote.
type claim struct {
	req         Request
	seen, wrote int64
}

// unclaim puts back the next_due a claim moved, so that the next sweep
// finds the catalog due again. Best effort: a failure leaves the catalog
// due one interval later.
func (t *Table) unclaim(ctx context.Context, c claim) {
	_, _ = t.move(ctx, entry{req: c.req, nextDue: c.wrote}, c.seen)
}

func readEntry(item map[string]types.AttributeValue) entry {
	e := entry{req: Request{
		CatalogID: str(item, catalog.PartitionKey),
		VaultIDs:  strings(item, catalog.VaultIDsAttribute),
	}}
	e.nextDue, _ = number(item, catalog.NextDueAttribute)
	e.interval = seconds(item, catalog.IntervalAttribute)
	if e.interval <= 0 {
		e.interval = catalog.DefaultRefreshInterval
	}
	e.failures, _ = number(item, catalog.FailuresAttribute)
	e.retryAfter, _ = number(item, catalog.RetryAfterAttribute)
	return e
}

// overdue3x reports whether e's catalog is at least three intervals
// stale: its due time is more than three intervals past (the sweep is
// behind), or two discoveries in a row failed (the first one interval
// after the last success, the retry no sooner than two intervals later).
func (e entry) overdue3x(now time.Time) bool {
	return e.failures >= 2 || now.Unix()-e.nextDue > int64(3*e.interval/time.Second)
}

// Metric names (EMF, namespace runner.Namespace, by Function): a sweep's
// counts, and the re-discoveries calls requested.
const (
	MetricDue          = "SweepDue"
	MetricEnqueued     = "SweepEnqueued"
	MetricBackingOff   = "SweepBackingOff"
	MetricOverdue3x    = "SweepOverdue3x"
	MetricStaleRequest = "StaleRediscoveries"
)

// Counts is s as metrics, for runner.EmitCounts.
func (s Swept) Counts() map[string]int {
	return map[string]int{MetricDue: s.Due, MetricEnqueued: s.Enqueued, MetricBackingOff: s.BackingOff, MetricOverdue3x: s.Overdue3x}
}
