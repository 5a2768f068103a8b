package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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
// later (it moved their next_due there); Unanswered those whose send had
// no answer by the sweep's end (their claim is kept: the queue may hold
// them); Stranded those claimed (or maybe claimed) but neither sent nor
// undone, because the undo failed or the sweep's end came first: each
// waits one interval more. The rest of Due were claimed meanwhile by
// another sweep, or not sent (their claim is undone).
// Overdue3x counts the due entries at least three intervals stale:
// next_due more than three intervals past, or two failures or more in a
// row. Complete is false when the context ended before every page was
// read; the rest stay due.
type Swept struct {
	Due        int  `json:"due"`
	Enqueued   int  `json:"enqueued"`
	BackingOff int  `json:"backing_off"`
	Unanswered int  `json:"-"`
	Stranded   int  `json:"-"`
	Overdue3x  int  `json:"-"`
	Complete   bool `json:"-"`
}

func (s *Swept) add(o Swept) {
	s.Due += o.Due
	s.Enqueued += o.Enqueued
	s.BackingOff += o.BackingOff
	s.Unanswered += o.Unanswered
	s.Stranded += o.Stranded
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
// parallel, and sends them; it starts the next sendBatch only while ctx
// has not ended and twice the slowest claim-and-send so far (at least a
// first estimate: its Query plus firstSendEstimate) plus the slowest
// claims end before end, so that every claim is sent or undone.
//
// ctx bounds reading the index and starting a sendBatch; end (the
// invocation's deadline less what answering needs; zero: sendGrace after
// ctx ends) bounds claims, sends and undos, which run on a context
// detached from ctx: a started claim-and-send is never cut off when ctx
// ends. A claim SQS did not accept, or that failed, is undone by end; one
// whose send had no answer by end is kept (Unanswered); one whose undo
// failed is counted (Stranded). When ctx ends mid-sweep the rest stay due
// and Sweep returns Complete false, no error; an error is a DynamoDB
// failure other than a lost claim.
func (t *Table) Sweep(ctx context.Context, q Enqueuer, end time.Time) (Swept, error) {
	now := t.opts.Now()
	f := newFollowUp(ctx, end)
	defer f.stop()
	p := &pace{}
	results := make([]Swept, catalog.DueShards)
	errs := make([]error, catalog.DueShards)
	var wg sync.WaitGroup
	for i := range catalog.DueShards {
		wg.Go(func() { results[i], errs[i] = t.sweepShard(ctx, f, p, q, strconv.Itoa(i), now) })
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

func (t *Table) sweepShard(ctx context.Context, f *followUp, p *pace, q Enqueuer, shard string, now time.Time) (Swept, error) {
	var sw Swept
	var start map[string]types.AttributeValue
	for {
		if ctx.Err() != nil {
			return sw, nil
		}
		e, err := expression.NewBuilder().WithKeyCondition(
			expression.Key(catalog.DueShardAttribute).Equal(expression.Value(&types.AttributeValueMemberS{Value: shard})).
				And(expression.Key(catalog.NextDueAttribute).LessThanEqual(num(now.Unix())))).Build()
		if err != nil {
			return sw, fmt.Errorf("schedule: query due shard %s: %w", shard, err)
		}
		asked := time.Now()
		out, err := t.api.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(t.table),
			IndexName:                 aws.String(catalog.DueIndex),
			KeyConditionExpression:    e.KeyCondition(),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
			Limit:                     aws.Int32(t.opts.PageSize),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			if ctx.Err() != nil {
				return sw, nil
			}
			return sw, fmt.Errorf("schedule: query due shard %s: %w", shard, err)
		}
		p.estimate(time.Since(asked))
		for lo := 0; lo < len(out.Items); lo += sendBatch {
			if !f.fits(ctx, p) {
				return sw, nil // the rest stay due
			}
			g, err := t.claimAndSend(ctx, f, p, q, out.Items[lo:min(lo+sendBatch, len(out.Items))], now)
			sw.add(g)
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
// parallel on f.ctx, or moves them to their retry_after, sends the claimed
// ones and undoes each claim SQS did not accept or that failed (it may
// have landed), and records in p how long claims and all took. An error
// is a DynamoDB failure other than a lost claim.
func (t *Table) claimAndSend(ctx context.Context, f *followUp, p *pace, q Enqueuer, items []map[string]types.AttributeValue, now time.Time) (Swept, error) {
	began := time.Now()
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
		if r.e, r.err = readEntry(item); r.err != nil {
			r.backingOff = true // nothing claimed, nothing to undo
			continue
		}
		r.next, r.backingOff = now.Add(r.e.interval).Unix(), r.e.retryAfter > now.Unix()
		if r.backingOff {
			r.next = r.e.retryAfter
		}
		wg.Go(func() { r.ok, r.err = t.move(f.ctx, r.e, r.next) })
	}
	wg.Wait()
	claims := time.Since(began)
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
			if f.ctx.Err() == nil && stop == nil {
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
	sw.Enqueued, sw.Unanswered, sw.Stranded = t.send(f, q, claimed, lost)
	p.measured(time.Since(began), claims)
	return sw, stop
}

// send enqueues the claimed catalogs on f.ctx and undoes on f.ctx (in
// parallel) the claim of each one q refused or was not given, and of each
// lost one. A claim whose send went unanswered (ErrUnanswered) is kept:
// SQS may hold its message, and undoing it could enqueue the catalog twice.
// It returns how many q accepted, how many went unanswered, and how many
// claims it could not undo.
func (t *Table) send(f *followUp, q Enqueuer, claimed, lost []claim) (sent, unanswered, stranded int) {
	undo := lost
	if len(claimed) > 0 {
		var errs []error
		if f.ctx.Err() == nil {
			reqs := make([]Request, len(claimed))
			for j, c := range claimed {
				reqs[j] = c.req
			}
			errs = q.Enqueue(f.ctx, reqs)
		}
		for j, c := range claimed {
			switch {
			case j < len(errs) && errs[j] == nil:
				sent++
			case j < len(errs) && errors.Is(errs[j], ErrUnanswered):
				unanswered++
			default:
				undo = append(undo, c)
			}
		}
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range undo {
		wg.Go(func() {
			if t.unclaim(f.ctx, c) != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	return sent, unanswered, int(failed.Load())
}

// move sets e's next_due to next if it is still the one the index
// returned; ok false means another writer (a sweep, a discovery, taking
// it off the schedule) changed it first.
func (t *Table) move(ctx context.Context, e entry, next int64) (bool, error) {
	nd := expression.Name(catalog.NextDueAttribute)
	x, err := expression.NewBuilder().WithUpdate(expression.Set(nd, num(next))).WithCondition(nd.Equal(num(e.nextDue))).Build()
	if err != nil {
		return false, fmt.Errorf("schedule: claim %q: %w", e.req.CatalogID, err)
	}
	err = t.updateHead(ctx, e.req.CatalogID, x)
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
// finds the catalog due again; a claim that never landed, or that another
// writer moved on since, is left alone. An error leaves the catalog due
// one interval later.
func (t *Table) unclaim(ctx context.Context, c claim) error {
	_, err := t.move(ctx, entry{req: c.req, nextDue: c.wrote}, c.seen)
	return err
}

func readEntry(item map[string]types.AttributeValue) (entry, error) {
	hs, err := catalog.DecodeSchedule(item)
	if err != nil {
		return entry{}, err
	}
	e := entry{req: Request{CatalogID: hs.CatalogID, VaultIDs: hs.VaultIDs}, interval: hs.Every()}
	if hs.RetryAfter != nil {
		e.retryAfter = *hs.RetryAfter
	}
	if hs.NextDue != nil {
		e.nextDue = *hs.NextDue
	}
	if hs.Failures != nil {
		e.failures = *hs.Failures
	}
	return e, nil
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
	MetricUnanswered   = "SweepUnanswered"
	MetricStranded     = "SweepStranded"
	MetricOverdue3x    = "SweepOverdue3x"
	MetricStaleRequest = "StaleRediscoveries"
)

// Counts is s as metrics, for runner.EmitCounts.
func (s Swept) Counts() map[string]int {
	return map[string]int{MetricDue: s.Due, MetricEnqueued: s.Enqueued, MetricBackingOff: s.BackingOff, MetricUnanswered: s.Unanswered, MetricStranded: s.Stranded, MetricOverdue3x: s.Overdue3x}
}
