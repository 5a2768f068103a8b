package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

const serverURL = "https://mcp.example.com/mcp"

// clock is a fake clock tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// queue is an Enqueuer that records what it is given; fail makes it
// refuse every request.
type queue struct {
	mu   sync.Mutex
	got  []schedule.Request
	fail bool
}

func (q *queue) Enqueue(_ context.Context, reqs []schedule.Request) []error {
	q.mu.Lock()
	defer q.mu.Unlock()
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		if q.fail {
			errs[i] = fmt.Errorf("refused")
			continue
		}
		q.got = append(q.got, r)
	}
	return errs
}

// take returns the catalog ids enqueued since the last take, sorted.
func (q *queue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	for _, r := range q.got {
		ids = append(ids, r.CatalogID)
	}
	q.got = nil
	slices.Sort(ids)
	return ids
}

// counting counts the requests a schedule.Table makes, by operation.
type counting struct {
	schedule.DynamoAPI
	queries, indexQueries, gets, updates atomic.Int64
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	if aws.ToString(in.IndexName) == catalog.DueIndex {
		c.indexQueries.Add(1)
	}
	return c.DynamoAPI.Query(ctx, in, o...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.DynamoAPI.GetItem(ctx, in, o...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.DynamoAPI.UpdateItem(ctx, in, o...)
}

// fixture is a catalog table with a store and a schedule on a fake clock.
type fixture struct {
	client *dynamodb.Client
	table  string
	strict *catalogtest.StrictAPI
	store  *catalog.Dynamo
	clock  *clock
	sched  *schedule.Table
	count  *counting
}

func newFixture(t *testing.T, o schedule.Options) *fixture {
	t.Helper()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	f := &fixture{client: client, table: table, strict: catalogtest.Strict(t, client), clock: &clock{now: catalogtest.T0}}
	f.store = catalog.NewDynamo(f.strict, table, catalog.WithSealer(catalogtest.NewSealer(t, awstest.SharedMoto(t))))
	f.count = &counting{DynamoAPI: f.strict}
	o.Now = f.clock.Now
	f.sched = schedule.New(f.count, table, o)
	return f
}

func dur(d time.Duration) *time.Duration { return &d }

// put records a successful discovery of id started at T0 + offset.
func (f *fixture) put(t *testing.T, id string, offset time.Duration, interval *time.Duration) {
	t.Helper()
	d := catalogtest.Discover(catalogtest.Listing(2, "a"), offset)
	d.Schedule = &catalog.Schedule{ServerURL: serverURL, VaultIDs: []string{"v1"}, Interval: interval}
	if _, err := f.store.Put(t.Context(), id, d); err != nil {
		t.Fatal(err)
	}
}

// sweep sweeps at T0 + at.
func (f *fixture) sweep(t *testing.T, q schedule.Enqueuer, at time.Duration) schedule.Swept {
	t.Helper()
	f.clock.Set(catalogtest.T0.Add(at))
	sw, err := f.sched.Sweep(t.Context(), q, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !sw.Complete {
		t.Errorf("sweep at T0+%s incomplete", at)
	}
	return sw
}

func TestSweepEnqueuesDueCatalogsOncePerInterval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "hourly-a", 0, nil) // the default interval, 1 h
	f.put(t, "hourly-b", 0, dur(time.Hour))
	f.put(t, "two-hourly", 0, dur(2*time.Hour))
	q := &queue{}

	steps := []struct {
		at         time.Duration
		want       []string
		due        int
		concurrent int // sweeps at once, as several instances would
	}{
		{at: 59 * time.Minute}, // just before the first interval ends
		{at: time.Hour, want: []string{"hourly-a", "hourly-b"}, due: 2},
		{at: time.Hour},                       // the same tick again: claimed
		{at: 90 * time.Minute, concurrent: 4}, // nothing due
		{at: 2 * time.Hour, want: []string{"hourly-a", "hourly-b", "two-hourly"}, due: 3, concurrent: 4},
		{at: 2*time.Hour + time.Second, concurrent: 4},
		{at: 3 * time.Hour, want: []string{"hourly-a", "hourly-b"}, due: 2},
	}
	for _, st := range steps {
		f.clock.Set(catalogtest.T0.Add(st.at))
		n := max(st.concurrent, 1)
		results := make([]schedule.Swept, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				sw, err := f.sched.Sweep(t.Context(), q, time.Time{})
				if err != nil {
					t.Error(err)
				}
				results[i] = sw
			})
		}
		wg.Wait()
		var enqueued, due int
		for _, r := range results {
			enqueued += r.Enqueued
			due = max(due, r.Due)
		}
		got := q.take()
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("T0+%s: enqueued (-want +got):\n%s", st.at, diff)
		}
		if enqueued != len(st.want) || (st.concurrent == 0 && due != st.due) {
			t.Errorf("T0+%s: swept %+v, want due %d, enqueued %d in all", st.at, results, st.due, len(st.want))
		}
	}
}

func TestSweepRequestShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "shape", 0, nil)
	q := &queue{}
	f.sweep(t, q, time.Hour)
	want := []schedule.Request{{CatalogID: "shape", VaultIDs: []string{"v1"}}}
	if diff := cmp.Diff(want, q.got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(q.got[0])
	if got := string(b); got != `{"catalog_id":"shape","vault_ids":["v1"]}` { // the URL stays sealed on the head
		t.Errorf("body %s", got)
	}
}

func TestBackoffAfter(t *testing.T) {
	const h = time.Hour
	tests := []struct {
		n        int
		interval time.Duration
		want     time.Duration
	}{
		{1, h, 2 * h},
		{2, h, 4 * h},
		{4, h, 16 * h},
		{5, h, 24 * h}, // 32 h, capped
		{60, h, 24 * h},
		{1000, time.Minute, 24 * h}, // no overflow
		{1, 7 * 24 * h, 24 * h},     // an interval past the cap: the interval governs (next_due)
	}
	for _, tt := range tests {
		if got := schedule.BackoffAfter(tt.n, tt.interval, 24*h); got != tt.want {
			t.Errorf("BackoffAfter(%d, %s, 24h) = %s, want %s", tt.n, tt.interval, got, tt.want)
		}
	}
}

// TestFailingServerBacksOff sweeps every 30 minutes for four days a
// catalog whose every discovery fails: attempts come at 2^n intervals,
// then once per 24 h cap, and a backing-off catalog costs one index read
// and one update per attempt, not one per tick.
func TestFailingServerBacksOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "dead", 0, nil) // interval 1 h
	q := &queue{}
	var attempts []time.Duration
	backingOff, ticks := 0, 0
	updatesBefore := f.count.updates.Load()
	for at := 30 * time.Minute; at <= 96*time.Hour; at += 30 * time.Minute {
		ticks++
		sw := f.sweep(t, q, at)
		backingOff += sw.BackingOff
		for range q.take() {
			attempts = append(attempts, at)
			b, err := f.sched.RecordFailure(t.Context(), "dead") // the discovery fails
			if err != nil {
				t.Fatal(err)
			}
			if want := catalogtest.T0.Add(at + schedule.BackoffAfter(b.Failures, time.Hour, 24*time.Hour)); !b.RetryAfter.Equal(want) {
				t.Errorf("failure %d: retry after %s, want %s", b.Failures, b.RetryAfter, want)
			}
		}
	}
	h := time.Hour
	// Failure n at t waits 2^n h: 1 → 3, 3 → 7, 7 → 15, 15 → 31, then 24 h each.
	want := []time.Duration{1 * h, 3 * h, 7 * h, 15 * h, 31 * h, 55 * h, 79 * h}
	if diff := cmp.Diff(want, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	// Each attempt leaves next_due one interval on; the sweep then sees it
	// once, backing off, and moves it to retry_after.
	if backingOff != len(want) {
		t.Errorf("backing_off counted %d times, want %d (once per attempt)", backingOff, len(want))
	}
	// Claims, moves and failure records: 2 updates per attempt, 1 per backing off.
	if got, max := f.count.updates.Load()-updatesBefore, int64(2*len(want)+backingOff); got != max {
		t.Errorf("%d updates over %d ticks, want %d", got, ticks, max)
	}

	// A successful discovery ends the streak: the next one is due an
	// interval later, and failing again starts from one failure.
	f.put(t, "dead", 96*h, nil)
	if sw := f.sweep(t, q, 97*h); sw.Enqueued != 1 || sw.BackingOff != 0 {
		t.Errorf("after a success: swept %+v, want one enqueued", sw)
	}
	b, err := f.sched.RecordFailure(t.Context(), "dead")
	if err != nil || b.Failures != 1 {
		t.Errorf("RecordFailure after a success = %+v, %v; want failure 1", b, err)
	}
}

func TestRecordFailureOffTheSchedule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "off", 0, dur(0))
	for _, id := range []string{"off", "absent"} {
		b, err := f.sched.RecordFailure(t.Context(), id)
		if err != nil || b != (schedule.Backoff{}) {
			t.Errorf("RecordFailure(%q) = %+v, %v; want nothing recorded", id, b, err)
		}
	}
	out, err := f.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key("absent")})
	if err != nil || out.Item != nil {
		t.Errorf("RecordFailure created a head: %v, %v", out.Item, err)
	}
}

func TestOverdue3x(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "late", 0, nil)
	f.put(t, "fresh", 3*time.Hour, nil)
	// late was due at T0+1h; at T0+4h it is 3 intervals late (not more),
	// at T0+4h+1s it is.
	if sw := f.sweep(t, &queue{fail: true}, 4*time.Hour); sw.Overdue3x != 0 || sw.Due != 2 {
		t.Errorf("at exactly three intervals late: %+v, want due 2, overdue 0", sw)
	}
	if sw := f.sweep(t, &queue{}, 4*time.Hour+time.Second); sw.Overdue3x != 1 || sw.Enqueued != 2 {
		t.Errorf("more than three intervals late: %+v, want 2 enqueued, 1 overdue", sw)
	}
}

func TestOffTheScheduleIsNotEnqueued(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "stays", 0, nil)
	f.put(t, "leaves", 0, nil)
	f.put(t, "leaves", time.Minute, dur(0)) // an unchanged re-discovery taking it off
	q := &queue{}
	if sw := f.sweep(t, q, 48*time.Hour); sw.Due != 1 {
		t.Errorf("swept %+v, want only the scheduled catalog due", sw)
	}
	if diff := cmp.Diff([]string{"stays"}, q.take()); diff != "" {
		t.Errorf("enqueued (-want +got):\n%s", diff)
	}

	// Taken off between the index read and the claim: the claim's
	// condition fails and nothing is enqueued.
	f.put(t, "racer", 49*time.Hour, nil)
	racing := &offAfterQuery{DynamoAPI: f.strict, off: func() { f.put(t, "racer", 49*time.Hour+time.Minute, dur(0)) }}
	s := schedule.New(racing, f.table, schedule.Options{Now: f.clock.Now})
	f.clock.Set(catalogtest.T0.Add(51 * time.Hour))
	sw, err := s.Sweep(t.Context(), q, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.take(); slices.Contains(got, "racer") || sw.Due != 2 || sw.Enqueued != 1 {
		t.Errorf("swept %+v, enqueued %v; want racer seen due but not enqueued", sw, got)
	}
}

func (o *offAfterQuery) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := o.DynamoAPI.Query(ctx, in, opts...)
	if err == nil {
		for _, it := range out.Items {
			if v, _ := it[catalog.PartitionKey].(*types.AttributeValueMemberS); v != nil && v.Value == "racer" {
				o.once.Do(o.off)
			}
		}
	}
	return out, err
}

func TestStaleRequestOncePerWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "stale", 0, nil)
	fallback := []string{"other"}

	// A burst of 20 concurrent calls: one wins.
	f.clock.Set(catalogtest.T0.Add(time.Hour))
	var wins atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			req, ok, err := f.sched.StaleRequest(t.Context(), "stale", fallback)
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins.Add(1)
				want := schedule.Request{CatalogID: "stale", VaultIDs: []string{"v1"}}
				if diff := cmp.Diff(want, req); diff != "" {
					t.Errorf("request (-want +got):\n%s", diff)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d of a burst of 20 won, want 1", wins.Load())
	}
	for _, tt := range []struct {
		at   time.Duration
		want bool
	}{
		{time.Hour + 59*time.Second, false}, // inside the minute
		{time.Hour + time.Minute, true},     // the window has passed
		{time.Hour + time.Minute + time.Second, false},
	} {
		f.clock.Set(catalogtest.T0.Add(tt.at))
		if _, ok, err := f.sched.StaleRequest(t.Context(), "stale", fallback); err != nil || ok != tt.want {
			t.Errorf("T0+%s: ok %v, %v; want %v", tt.at, ok, err, tt.want)
		}
	}

	// A head without a recorded server: nothing to discover it from; no
	// head: nothing.
	legacy := catalogtest.Discover(catalogtest.Listing(1, "a"), 0)
	if _, err := f.store.Put(t.Context(), "legacy", legacy); err != nil {
		t.Fatal(err)
	}
	fb := []string{"mine"}
	if req, ok, err := f.sched.StaleRequest(t.Context(), "legacy", fb); err != nil || ok {
		t.Errorf("head without a server URL: %+v, %v, %v; want ok false", req, ok, err)
	}
	if _, ok, err := f.sched.StaleRequest(t.Context(), "absent", fb); err != nil || ok {
		t.Errorf("no head: ok %v, %v; want false", ok, err)
	}
	out, err := f.client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key("absent")})
	if err != nil || out.Item != nil {
		t.Errorf("StaleRequest created a head: %v, %v", out.Item, err)
	}
}
