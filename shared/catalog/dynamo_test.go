package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

func TestCreateTableMatchesTheTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	if err := catalog.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ Name, Type, Kind string }
	var got []key
	types_ := map[string]string{}
	for _, a := range d.Table.AttributeDefinitions {
		types_[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	for _, k := range d.Table.KeySchema {
		got = append(got, key{aws.ToString(k.AttributeName), types_[aws.ToString(k.AttributeName)], string(k.KeyType)})
	}
	want := []key{{"pk", "S", "HASH"}, {"sk", "S", "RANGE"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("key schema (-want +got):\n%s", diff)
	}
	if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.Table.BillingModeSummary)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if s := ttl.TimeToLiveDescription; s.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(s.AttributeName) != "expires_at" {
		t.Errorf("TTL %s on %q, want ENABLED on expires_at", s.TimeToLiveStatus, aws.ToString(s.AttributeName))
	}
	assertDueIndex(t, client, table)
}

// countingAPI counts requests by operation, and the items written: every
// put and delete in a BatchWriteItem and one per UpdateItem.
type countingAPI struct {
	catalog.DynamoAPI
	mu    sync.Mutex
	n     map[string]int
	items int
}

func (c *countingAPI) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[op]++
}

func (c *countingAPI) addItems(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items += n
}

// takeAll returns the requests by operation and the items written so
// far, and resets both.
func (c *countingAPI) takeAll() (map[string]int, int) {
	c.mu.Lock()
	items := c.items
	c.items = 0
	c.mu.Unlock()
	return c.take(), items
}

// take returns the requests by operation so far and resets the counts.
func (c *countingAPI) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n, c.items = nil, 0
	return n
}

func (c *countingAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add("GetItem")
	return c.DynamoAPI.GetItem(ctx, in, o...)
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.add("UpdateItem")
	c.addItems(1)
	return c.DynamoAPI.UpdateItem(ctx, in, o...)
}

func (c *countingAPI) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.add("Query")
	return c.DynamoAPI.Query(ctx, in, o...)
}

func (c *countingAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.add("BatchWriteItem")
	for _, reqs := range in.RequestItems {
		c.addItems(len(reqs))
	}
	return c.DynamoAPI.BatchWriteItem(ctx, in, o...)
}

func newCounted(t *testing.T, opts ...catalog.DynamoOption) (*catalog.Dynamo, *countingAPI, *dynamodb.Client, string) {
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	c := &countingAPI{DynamoAPI: catalogtest.Strict(t, client)}
	return catalog.NewDynamo(c, table, opts...), c, client, table
}

func TestDynamoRequests(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t)
	l := catalogtest.Listing(60, "a")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, 0))
	// Read the head, write the marker and 60 tools, flip.
	if diff := cmp.Diff(map[string]int{"GetItem": 1, "BatchWriteItem": 3, "UpdateItem": 1}, c.take()); diff != "" {
		t.Errorf("first put: requests (-want +got):\n%s", diff)
	}
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, time.Minute))
	if diff := cmp.Diff(map[string]int{"GetItem": 1, "UpdateItem": 1}, c.take()); diff != "" {
		t.Errorf("unchanged put: requests (-want +got):\n%s", diff)
	}
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(catalogtest.Listing(10, "b"), 2*time.Minute))
	// Read the head and the old manifest, Query the partition for the 50
	// removed names, write 10 tools and the marker, flip, delete the 60
	// old tools, then their marker.
	if diff := cmp.Diff(map[string]int{"GetItem": 2, "BatchWriteItem": 1 + 3 + 1, "UpdateItem": 1, "Query": 1}, c.take()); diff != "" {
		t.Errorf("replacing put: requests (-want +got):\n%s", diff)
	}
	if _, err := s.Lookup(context.Background(), "id", "tool-3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"GetItem": 1}, c.take()); diff != "" {
		t.Errorf("lookup: requests (-want +got):\n%s", diff)
	}
}

func TestLookupWithoutNameIndex(t *testing.T) {
	t.Parallel()
	s, c, _, _ := newCounted(t, catalog.WithNameIndexMax(4))
	small, large := catalogtest.Listing(4, "a"), catalogtest.Listing(5, "a")
	large.Tools[4].Description = string(make([]byte, 500_000)) // stored compressed
	yes, no := true, false
	hints := &mcp.Annotations{ReadOnlyHint: &yes, IdempotentHint: &no}
	for _, l := range []mcp.Listing{small, large} {
		l.Tools[3].Annotations = &mcp.Annotations{ReadOnlyHint: &yes, IdempotentHint: &no, Other: []byte(`{"x":1}`)}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		l     mcp.Listing
		reads map[bool]int // GetItems by found
	}{
		{"indexed", small, map[bool]int{true: 1, false: 1}},
		{"over the index limit", large, map[bool]int{true: 2, false: 2}}, // head, manifest
	} {
		res := catalogtest.MustPut(t, s, tc.name, catalogtest.Discover(tc.l, 0))
		c.take()
		for _, name := range []string{"tool-0", "tool-3", "tool-4", "tool-9"} {
			m, err := s.Lookup(ctx, tc.name, name)
			if err != nil {
				t.Fatal(err)
			}
			found := slices.ContainsFunc(tc.l.Tools, func(x mcp.Tool) bool { return x.Name == name })
			want := catalog.Membership{Found: found, Version: res.Version, ProtocolVersion: "2025-11-25"}
			if name == "tool-3" {
				want.Annotations = hints // the hints alone
			}
			if diff := cmp.Diff(want, m); diff != "" {
				t.Errorf("%s: Lookup(%s) (-want +got):\n%s", tc.name, name, diff)
			}
			if got := c.take()["GetItem"]; got != tc.reads[m.Found] {
				t.Errorf("%s: Lookup(%s) made %d GetItems, want %d", tc.name, name, got, tc.reads[m.Found])
			}
		}
	}
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// rawItems returns every item in table but heads.
func rawItems(t *testing.T, client *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			if sk, _ := item[catalog.SortKey].(*types.AttributeValueMemberS); sk.Value != catalog.HeadSortKey {
				items = append(items, item)
			}
		}
	}
	return items
}

func expiresAt(item map[string]types.AttributeValue) int64 {
	n, _ := item[catalog.TTLAttribute].(*types.AttributeValueMemberN)
	if n == nil {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

func assertExpiry(t *testing.T, client *dynamodb.Client, table string, want time.Time) {
	t.Helper()
	items := rawItems(t, client, table)
	if len(items) == 0 {
		t.Fatal("no items")
	}
	for _, item := range items {
		if got := expiresAt(item); got != want.Unix() {
			t.Fatalf("item %v expires at %d, want %d", item[catalog.SortKey], got, want.Unix())
		}
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	clk := &clock{now: time.Now()}
	start := clk.Now()
	s, c, client, table := newCounted(t, catalog.WithClock(clk.Now), catalog.WithRetention(10*day))
	l := catalogtest.Listing(30, "a")
	l.Refused = []mcp.Refusal{{Name: "r", Reason: "bad"}}
	v := catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, 0)).Version
	assertExpiry(t, client, table, start.Add(10*day))

	clk.Add(4 * day) // under half the retention: one write
	c.take()
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, time.Hour))
	if got := c.take(); got["BatchWriteItem"] != 0 || got["UpdateItem"] != 1 {
		t.Errorf("check at 4 days: requests %v, want one UpdateItem", got)
	}
	clk.Add(2 * day) // past half: the items' TTL is renewed
	res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, 2*time.Hour))
	if !res.Unchanged || res.Version != v {
		t.Fatalf("renewing check = %+v, want unchanged %s", res, v)
	}
	assertExpiry(t, client, table, start.Add(16*day))
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), l)

	clk.Add(10 * day) // expired unchecked: TTL may have removed items
	ctx := context.Background()
	if _, err := s.Get(ctx, "id"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Get of an expired version: %v, want ErrNotFound", err)
	}
	if _, err := s.Lookup(ctx, "id", "tool-0"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Lookup in an expired version: %v, want ErrNotFound", err)
	}
	res = catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, 3*time.Hour))
	if res.Unchanged || res.Version == v {
		t.Errorf("put after expiry = %+v, want a new version", res)
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), l)
	catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
}

// unprocessedAPI leaves the second half of every BatchWriteItem unprocessed
// while budget lasts (forever when budget < 0).
type unprocessedAPI struct {
	catalog.DynamoAPI
	mu     sync.Mutex
	budget int
	calls  int
}

func (u *unprocessedAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	u.mu.Lock()
	u.calls++
	partial := u.budget != 0
	if u.budget > 0 {
		u.budget--
	}
	u.mu.Unlock()
	if !partial {
		return u.DynamoAPI.BatchWriteItem(ctx, in, o...)
	}
	done, left := map[string][]types.WriteRequest{}, map[string][]types.WriteRequest{}
	for table, reqs := range in.RequestItems {
		done[table], left[table] = reqs[:len(reqs)/2], reqs[len(reqs)/2:]
	}
	if len(done) > 0 {
		if _, err := u.DynamoAPI.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: done}, o...); err != nil {
			return nil, err
		}
	}
	return &dynamodb.BatchWriteItemOutput{UnprocessedItems: left}, nil
}

func TestUnprocessedItemsAreRetried(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	u := &unprocessedAPI{DynamoAPI: catalogtest.Strict(t, client), budget: 40}
	s := catalog.NewDynamo(u, table, catalog.WithBackoff(time.Millisecond, 5*time.Millisecond))
	a, b := catalogtest.Listing(200, "a"), catalogtest.Listing(120, "b")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
	res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Minute))
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), b)
	catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
	u.mu.Lock()
	if u.calls <= 9+5+9 { // batches of a, b and a's deletion, without retries
		t.Errorf("%d BatchWriteItem calls: unprocessed items were not retried", u.calls)
	}
	u.mu.Unlock()

	u.mu.Lock()
	u.budget = -1 // nothing is ever processed in full
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.Put(ctx, "id", catalogtest.Discover(a, 2*time.Minute))
	if !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("Put while items stay unprocessed: %v, want ErrUnavailable", err)
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), b)
}

// TestRaceLeavesNoItemsBehind races discoveries, then scans the table: only
// the head, the winner's marker and the items its manifest names remain.
func TestRaceLeavesNoItemsBehind(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(catalogtest.Strict(t, client), table)
	const writers = 6
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			l := catalogtest.Listing(30+i, fmt.Sprint(i))
			l.Refused = []mcp.Refusal{{Name: "r", Reason: fmt.Sprint(i)}}
			if _, err := s.Put(context.Background(), "id", catalogtest.Discover(l, time.Duration(i)*time.Second)); err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	c := catalogtest.MustGet(t, s, "id")
	if c.Refused[0].Reason != fmt.Sprint(writers-1) {
		t.Fatalf("catalog of writer %s, want the last-started %d", c.Refused[0].Reason, writers-1)
	}
	if items := rawItems(t, client, table); len(items) != 1+30+writers-1 { // marker, tools (refusals are in the marker)
		t.Errorf("%d items besides the head, want %d", len(items), 1+30+writers-1)
	}
	assertNoOrphans(t, s, client, table, "id")
}
