package schedule_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

// offAfterQuery runs off once, after the first due-index page that holds
// the catalog "racer".
type offAfterQuery struct {
	schedule.DynamoAPI
	once sync.Once
	off  func()
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

// TestBudgetEndsMidPage: the sweep's context ends while the first claims
// are under way; they still land and are sent, no new sendBatch starts,
// and the next sweep enqueues the rest: every catalog once.
//
// Each request takes 10 ms: the Queries answer at 10 ms, each shard's
// first sendBatch claims from 10 to 20 ms, and the context is cancelled at
// 15 ms, between the two, so every first sendBatch is under way and every
// shard finds it ended when it looks for a next one at 20 ms. (Cancelled
// when the third claim was answered, the context ended at 20 ms, the
// instant at which every shard looks for its next sendBatch, and a shard
// that looked before the cancel started one.)
func TestBudgetEndsMidPage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 200 // about 25 a shard: no shard's first sendBatch takes them all
		mem := newMemTable(n, time.Now(), 10*time.Millisecond)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(15*time.Millisecond, cancel)
		perShard := map[string]int{}
		for i := range n {
			perShard[catalog.DueShard(fmt.Sprintf("c%04d", i))]++
		}
		underWay := 0 // each shard's first sendBatch: under way at 15 ms
		for _, c := range perShard {
			underWay += min(c, 10)
		}
		q := &queue{}
		sw, err := schedule.New(mem, "catalog", schedule.Options{}).Sweep(ctx, q, time.Time{})
		if err != nil || sw.Complete || sw.Enqueued != underWay || sw.Stranded != 0 {
			t.Fatalf("Sweep = %+v, %v; want an incomplete sweep that sent the %d claims under way, no more", sw, err, underWay)
		}
		first := q.take()
		if len(first) != sw.Enqueued || len(mem.stillDue(time.Now())) != n-sw.Enqueued {
			t.Errorf("enqueued %d, reported %d, %d still due; want the rest of %d due", len(first), sw.Enqueued, len(mem.stillDue(time.Now())), n)
		}
		if _, err := schedule.New(mem, "catalog", schedule.Options{}).Sweep(t.Context(), q, time.Time{}); err != nil {
			t.Fatal(err)
		}
		all := append(first, q.take()...)
		slices.Sort(all)
		if distinct := len(slices.Compact(slices.Clone(all))); len(all) != n || distinct != n {
			t.Errorf("over two sweeps enqueued %d (%d distinct), want each of the %d once", len(all), distinct, n)
		}
	})
}
