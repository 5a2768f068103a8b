package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
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

// offAfterQuery runs off once, after the first due-index page that holds
// the catalog "racer".
type offAfterQuery struct {
	schedule.DynamoAPI
	once sync.Once
	off  func()
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

func TestUnsentClaimIsUndone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "unsent", 0, nil)
	if sw := f.sweep(t, &queue{fail: true}, time.Hour); sw.Due != 1 || sw.Enqueued != 0 {
		t.Errorf("failing queue: swept %+v, want due 1, enqueued 0", sw)
	}
	q := &queue{}
	f.sweep(t, q, time.Hour+time.Minute)
	if diff := cmp.Diff([]string{"unsent"}, q.take()); diff != "" {
		t.Errorf("next sweep enqueued (-want +got):\n%s", diff)
	}
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: id},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
	}
}

// TestSweepsTenThousandInPages writes 10,000 scheduled heads (in the
// shape Put writes them) and sweeps them all: due-index Queries in pages
// of PageSize (at most 500 entries), one claim each, sends in batches; no Scan (DynamoAPI has
// none) and no Query outside the index.
func TestSweepsTenThousandInPages(t *testing.T) {
	t.Parallel()
	// Pages of 500: moto reads its whole table for every index Query
	// (0.6 s each at 10,000 items), so pages of 100 would take a minute.
	const n, page = 10_000, 500
	f := newFixture(t, schedule.Options{PageSize: page})
	// No claim races here: the client is moto's own, not serialised.
	f.count.DynamoAPI = f.client
	due := catalogtest.T0.Add(time.Hour).Unix()
	perShard := make([]int, catalog.DueShards)
	var writes []types.WriteRequest
	for i := range n {
		id := fmt.Sprintf("c%05d", i)
		shard := catalog.DueShard(id)
		s, _ := strconv.Atoi(shard)
		perShard[s]++
		item := key(id)
		item[catalog.VaultIDsAttribute] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
		item[catalog.IntervalAttribute] = &types.AttributeValueMemberN{Value: "3600"}
		// Distinct due times: moto sorts index entries of equal next_due
		// in an order its own paging does not follow, and would skip some.
		item[catalog.NextDueAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(due-int64(i), 10)}
		item[catalog.DueShardAttribute] = &types.AttributeValueMemberS{Value: shard}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	batches := make(chan []types.WriteRequest)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range batches {
				out, err := f.client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{f.table: b}})
				if err != nil || len(out.UnprocessedItems) > 0 {
					t.Errorf("BatchWriteItem: %v (%d unprocessed)", err, len(out.UnprocessedItems))
				}
			}
		})
	}
	for lo := 0; lo < n; lo += catalog.MaxBatchItems {
		batches <- writes[lo:min(lo+catalog.MaxBatchItems, n)]
	}
	close(batches)
	wg.Wait()

	q := &queue{}
	sw := f.sweep(t, q, time.Hour)
	if sw.Due != n || sw.Enqueued != n {
		t.Errorf("swept %+v, want %d due and enqueued", sw, n)
	}
	ids := q.take()
	if len(slices.Compact(ids)) != n {
		t.Errorf("%d distinct catalogs enqueued, want %d", len(slices.Compact(ids)), n)
	}
	// A page holds at most PageSize entries; a shard whose count is a
	// multiple of it may take one empty page more.
	minPages, maxPages := int64(0), int64(0)
	for _, c := range perShard {
		minPages += int64((c + page - 1) / page)
		maxPages += int64(c/page + 1)
	}
	queries, index, updates := f.count.queries.Load(), f.count.indexQueries.Load(), f.count.updates.Load()
	t.Logf("10,000 due: %d Query (all on the due index), %d UpdateItem, %d GetItem; shards %v", queries, updates, f.count.gets.Load(), perShard)
	if index != queries || queries < minPages || queries > maxPages {
		t.Errorf("%d Queries (%d on the index), want %d to %d, all on the index", queries, index, minPages, maxPages)
	}
	if updates != n || f.count.gets.Load() != 0 {
		t.Errorf("%d UpdateItem, %d GetItem; want %d claims and no reads", updates, f.count.gets.Load(), n)
	}

	// The next tick finds nothing due: one Query per shard.
	before := f.count.queries.Load()
	if sw := f.sweep(t, q, time.Hour+time.Minute); sw.Due != 0 {
		t.Errorf("second sweep %+v, want nothing due", sw)
	}
	if got := f.count.queries.Load() - before; got != catalog.DueShards {
		t.Errorf("an idle sweep made %d Queries, want %d", got, catalog.DueShards)
	}
}

func TestSweepStopsWhenTheBudgetEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	f.put(t, "later", 0, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f.clock.Set(catalogtest.T0.Add(time.Hour))
	sw, err := f.sched.Sweep(ctx, &queue{}, time.Time{})
	if err != nil || sw.Complete || sw.Due != 0 {
		t.Errorf("Sweep with an ended context = %+v, %v; want incomplete, nothing done, no error", sw, err)
	}
	q := &queue{}
	f.sweep(t, q, time.Hour)
	if diff := cmp.Diff([]string{"later"}, q.take()); diff != "" {
		t.Errorf("the next sweep enqueued (-want +got):\n%s", diff)
	}
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

func TestSenderOverSQS(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := sqs.NewFromConfig(awstest.SharedMoto(t).Config(ctx))
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(awstest.UniqueName("discover"))})
	if err != nil {
		t.Fatal(err)
	}
	s := &schedule.Sender{API: client, URL: aws.ToString(out.QueueUrl)}
	var reqs []schedule.Request
	want := map[string]bool{}
	for i := range 23 {
		r := schedule.Request{CatalogID: fmt.Sprintf("c%d", i)}
		if i%2 == 0 {
			r.VaultIDs = []string{"v"}
		}
		reqs = append(reqs, r)
		b, _ := json.Marshal(r)
		want[string(b)] = true
	}
	for i, err := range s.Enqueue(ctx, reqs) {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if err := s.Send(ctx, schedule.Request{CatalogID: "one"}); err != nil {
		t.Fatal(err)
	}
	want[`{"catalog_id":"one"}`] = true
	got := map[string]bool{}
	for {
		m, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Messages) == 0 {
			break
		}
		for _, msg := range m.Messages {
			got[aws.ToString(msg.Body)] = true
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: out.QueueUrl, ReceiptHandle: msg.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message bodies (-want +got):\n%s", diff)
	}
}

// cancelAfter cancels a context after n UpdateItems have been answered.
type cancelAfter struct {
	schedule.DynamoAPI
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.DynamoAPI.UpdateItem(ctx, in, o...)
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return out, err
}

// TestBudgetEndsMidPage: the sweep's context ends after a few claims; what
// it claimed is still sent, nothing more is claimed, and the next sweep
// enqueues the rest: every catalog once.
func TestBudgetEndsMidPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, schedule.Options{})
	for i := range 20 {
		f.put(t, fmt.Sprintf("c%02d", i), 0, nil)
	}
	ctx, cancel := context.WithCancel(t.Context())
	api := &cancelAfter{DynamoAPI: f.strict, cancel: cancel}
	api.n.Store(3)
	s := schedule.New(api, f.table, schedule.Options{Now: f.clock.Now})
	f.clock.Set(catalogtest.T0.Add(time.Hour))
	q := &queue{}
	sw, err := s.Sweep(ctx, q, time.Time{})
	if err != nil || sw.Complete || sw.Enqueued < 3 || sw.Enqueued == 20 {
		t.Fatalf("Sweep = %+v, %v; want an incomplete sweep that sent at least its 3 claims", sw, err)
	}
	first := q.take()
	if len(first) != sw.Enqueued {
		t.Errorf("enqueued %v, want %d", first, sw.Enqueued)
	}
	f.sweep(t, q, time.Hour+time.Second)
	all := append(first, q.take()...)
	slices.Sort(all)
	if len(all) != 20 || len(slices.Compact(slices.Clone(all))) != 20 {
		t.Errorf("over two sweeps enqueued %v, want each of the 20 once", all)
	}
}
