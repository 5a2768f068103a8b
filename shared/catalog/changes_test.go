package catalog_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awsconf"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// tableKeys returns every item's key in table as "pk sk", sorted.
func tableKeys(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	var keys []string
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			pk, _ := item[catalog.PartitionKey].(*types.AttributeValueMemberS)
			sk, _ := item[catalog.SortKey].(*types.AttributeValueMemberS)
			keys = append(keys, pk.Value+" "+sk.Value)
		}
	}
	sort.Strings(keys)
	return keys
}

// assertNoOrphans fails unless table, which holds only catalog id, holds
// exactly the items id's current version needs.
func assertNoOrphans(t *testing.T, s *catalog.Dynamo, client *dynamodb.Client, table, id string) {
	t.Helper()
	live, err := catalog.LiveKeys(context.Background(), s, id)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range live {
		want = append(want, k)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, tableKeys(t, client, table)); diff != "" {
		t.Errorf("items besides the current version's (-live +stored):\n%s", diff)
	}
}

// TestChangeMatrix stores a sequence of listings and checks, for each, the
// exact diff, the exact requests and items written, and that after the
// replaced version's retirement nothing but the current version is left
// (docs/catalog.md).
func TestChangeMatrix(t *testing.T) {
	t.Parallel()
	s, c, client, table := newCounted(t)
	base := catalogtest.Listing(60, "a")
	changeOne := slices.Clone(base.Tools)
	changeOne[7] = catalogtest.Tool("tool-7", "b")
	all := catalogtest.Listing(59, "c")
	type counts struct {
		requests map[string]int
		items    int // written: puts and deletes, one per UpdateItem
	}
	steps := []struct {
		name  string
		tools []mcp.Tool
		want  counts
		diff  *catalog.Changes
	}{
		// Head; 60 tools and the marker; flip.
		{"first", base.Tools, counts{map[string]int{"GetItem": 1, "BatchWriteItem": 3, "UpdateItem": 1}, 62},
			catalogtest.ChangesOf(catalogtest.Names(base), nil, nil)},
		{"unchanged", base.Tools, counts{map[string]int{"GetItem": 1, "UpdateItem": 1}, 1}, nil},
		// Head, old manifest; the new tool and the marker; flip; the old
		// marker (every old tool is kept).
		{"add one", append(slices.Clone(base.Tools), catalogtest.Tool("new", "a")),
			counts{map[string]int{"GetItem": 2, "BatchWriteItem": 2, "UpdateItem": 1}, 4},
			catalogtest.ChangesOf([]string{"new"}, nil, nil)},
		// Head, old manifest, the retired version's marker (gone), the two
		// removed tools' names; the marker; flip; two tools; the old marker.
		{"remove two", base.Tools[:59], counts{map[string]int{"GetItem": 5, "BatchWriteItem": 3, "UpdateItem": 1}, 5},
			catalogtest.ChangesOf(nil, []string{"new", "tool-59"}, nil)},
		// Head, old manifest, retired marker; the tool and the marker; flip;
		// the old tool; the old marker.
		{"change one", changeOne[:59], counts{map[string]int{"GetItem": 3, "BatchWriteItem": 3, "UpdateItem": 1}, 5},
			catalogtest.ChangesOf(nil, nil, []string{"tool-7"})},
		// As change one, with 59 tools written and 59 deleted.
		{"change all", all.Tools, counts{map[string]int{"GetItem": 3, "BatchWriteItem": 3 + 3 + 1, "UpdateItem": 1}, 60 + 1 + 59 + 1},
			catalogtest.ChangesOf(nil, nil, catalogtest.Names(all))},
		{"unchanged again", all.Tools, counts{map[string]int{"GetItem": 1, "UpdateItem": 1}, 1}, nil},
		{"reorder", slices.Concat(all.Tools[1:], all.Tools[:1]),
			counts{map[string]int{"GetItem": 3, "BatchWriteItem": 2, "UpdateItem": 1}, 3}, catalogtest.ChangesOf(nil, nil, nil)},
	}
	for i, st := range steps {
		c.take()
		l := mcp.Listing{Tools: st.tools}
		res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, time.Duration(i)*time.Minute))
		reqs, items := c.takeAll()
		if diff := cmp.Diff(st.want, counts{reqs, items}, cmp.AllowUnexported(counts{})); diff != "" {
			t.Errorf("%s: requests and items written (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.diff, res.Changes); diff != "" {
			t.Errorf("%s: changes (-want +got):\n%s", st.name, diff)
		}
		catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), l)
		catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
		assertNoOrphans(t, s, client, table, "id")
	}
	if diff := cmp.Diff(steps[7].diff, catalogtest.MustGet(t, s, "id").Changes); diff != "" {
		t.Errorf("changes of the last version (-want +got):\n%s", diff)
	}
}

// TestRacingChangesLeaveNoOrphans races discoveries that each change one
// tool of the same catalog: the latest-started wins, its diff is against
// the version it replaced, and once all return only its items remain.
func TestRacingChangesLeaveNoOrphans(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(catalogtest.Strict(t, client), table)
	base := catalogtest.Listing(40, "a")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(base, 0))
	const writers = 6
	listing := func(i int) mcp.Listing {
		l := mcp.Listing{Tools: slices.Clone(base.Tools)}
		l.Tools[i] = catalogtest.Tool(fmt.Sprintf("tool-%d", i), fmt.Sprintf("w%d", i))
		return l
	}
	var wg sync.WaitGroup
	results := make([]catalog.PutResult, writers)
	for i := range writers {
		wg.Go(func() {
			res, err := s.Put(context.Background(), "id", catalogtest.Discover(listing(i), time.Duration(writers-i)*time.Minute))
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := catalogtest.MustGet(t, s, "id")
	catalogtest.AssertContent(t, got, listing(0)) // writer 0 started last
	ok := cmp.Equal(catalogtest.ChangesOf(nil, nil, []string{"tool-0"}), got.Changes)
	for i := 1; i < writers && !ok; i++ { // over writer i's version
		ok = cmp.Equal(catalogtest.ChangesOf(nil, nil, []string{"tool-0", fmt.Sprintf("tool-%d", i)}), got.Changes)
	}
	if !ok {
		t.Errorf("winner's changes %+v are against no version it could have replaced", got.Changes)
	}
	if diff := cmp.Diff(got.Changes, results[0].Changes); diff != "" {
		t.Errorf("winner's reported changes (-stored +reported):\n%s", diff)
	}
	catalogtest.AssertOnlyVersion(t, s, "id", got.Version)
	assertNoOrphans(t, s, client, table, "id")
}

// failDeletes refuses, while armed, every BatchWriteItem that deletes
// (all of them, or only the one deleting a version's marker).
type failDeletes struct {
	catalog.DynamoAPI
	mu         sync.Mutex
	armed      bool
	markerOnly bool
	refused    int
}

func (f *failDeletes) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	refuse := false
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			if r.DeleteRequest == nil || !f.armed {
				continue
			}
			sk, _ := r.DeleteRequest.Key[catalog.SortKey].(*types.AttributeValueMemberS)
			if !f.markerOnly || sk.Value[:2] == "v#" {
				refuse = true
			}
		}
	}
	if refuse {
		f.refused++
	}
	f.mu.Unlock()
	if refuse {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "injected"}
	}
	return f.DynamoAPI.BatchWriteItem(ctx, in, o...)
}

// TestInterruptedRetirementIsFinished: a retirement that fails (every
// deletion, or only the marker's) leaves the replaced version's marker;
// the Put still succeeds, readers see the new version, and the next
// changing Put finishes the retirement, so nothing is left behind.
func TestInterruptedRetirementIsFinished(t *testing.T) {
	t.Parallel()
	for _, markerOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("marker only %t", markerOnly), func(t *testing.T) {
			t.Parallel()
			client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
			f := &failDeletes{DynamoAPI: client, markerOnly: markerOnly}
			s := catalog.NewDynamo(f, table)
			a := catalogtest.Listing(30, "a")
			ra := catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
			b := mcp.Listing{Tools: slices.Clone(a.Tools)}
			b.Tools[3] = catalogtest.Tool("tool-3", "b")
			f.mu.Lock()
			f.armed = true
			f.mu.Unlock()
			rb := catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Minute))
			f.mu.Lock()
			f.armed = false
			refused := f.refused
			f.mu.Unlock()
			if refused == 0 {
				t.Fatal("no deletion was refused")
			}
			catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), b)
			versions, err := s.StoredVersions(context.Background(), "id")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{ra.Version, rb.Version}, versions); diff != "" {
				t.Errorf("after an interrupted retirement: versions (-want +got):\n%s", diff)
			}
			if len(tableKeys(t, client, table)) <= 32 { // head, marker, 30 tools
				t.Errorf("the interrupted retirement left nothing behind")
			}
			// An unchanged check leaves the pending retirement; the next
			// change finishes it.
			catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, 2*time.Minute))
			c := mcp.Listing{Tools: slices.Clone(b.Tools)}
			c.Tools[4] = catalogtest.Tool("tool-4", "c")
			rc := catalogtest.MustPut(t, s, "id", catalogtest.Discover(c, 3*time.Minute))
			catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), c)
			catalogtest.AssertOnlyVersion(t, s, "id", rc.Version)
			assertNoOrphans(t, s, client, table, "id")
		})
	}
}

// TestChangedPutPastHalfRetentionRenews: a changing Put over a version
// past half its retention writes every tool afresh, so no kept item
// expires before the version's recorded expiry.
func TestChangedPutPastHalfRetentionRenews(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	clk := &clock{now: time.Now()}
	start := clk.Now()
	s, c, client, table := newCounted(t, catalog.WithClock(clk.Now), catalog.WithRetention(10*day))
	a := catalogtest.Listing(30, "a")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
	b := mcp.Listing{Tools: slices.Clone(a.Tools)}
	b.Tools[0] = catalogtest.Tool("tool-0", "b")
	clk.Add(4 * day) // under half: one tool written
	c.take()
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Hour))
	if _, items := c.takeAll(); items != 5 { // tool, marker, flip, old tool, old marker
		t.Errorf("change at 4 days wrote %d items, want 5", items)
	}
	clk.Add(2 * day) // past half: every tool written
	b.Tools[1] = catalogtest.Tool("tool-1", "b")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, 2*time.Hour))
	if _, items := c.takeAll(); items != 30+1+1+30+1 {
		t.Errorf("change at 6 days wrote %d items, want %d", items, 30+1+1+30+1)
	}
	assertExpiry(t, client, table, start.Add(16*day))
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), b)
	assertNoOrphans(t, s, client, table, "id")
}

// lostFlip applies the first flip it sees, runs then, and answers with a
// throttling error, as if the answer were lost: the client's retryer
// retries, and its condition no longer holds. It is the client's HTTP
// transport, so the fault meets the SDK's retryer.
type lostFlip struct {
	mu    sync.Mutex
	armed bool
	then  func()
}

func (l *lostFlip) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	l.mu.Lock()
	fire := l.armed && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") && bytes.Contains(body, []byte(`"manifest_chunks"`))
	if fire {
		l.armed = false
	}
	l.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if !fire || err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	l.then()
	return &http.Response{
		StatusCode: http.StatusBadRequest, Request: r,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Errortype": {"ThrottlingException"}},
		Body:   io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"injected after applying"}`)),
	}, nil
}

// TestLostFlipThenNewerFlipKeepsSharedItems: a Put whose flip landed
// unseen, and was replaced by a newer one that kept its items before it
// read the head again, reports Superseded and deletes none of the items
// the newer version references.
func TestLostFlipThenNewerFlipKeepsSharedItems(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	strict := catalogtest.Strict(t, client)
	newer := catalog.NewDynamo(strict, table)
	a := catalogtest.Listing(30, "a")
	catalogtest.MustPut(t, newer, "id", catalogtest.Discover(a, 0))
	b := mcp.Listing{Tools: slices.Clone(a.Tools)}
	b.Tools[1] = catalogtest.Tool("tool-1", "b")
	c := mcp.Listing{Tools: slices.Clone(b.Tools)}
	c.Tools[2] = catalogtest.Tool("tool-2", "c")
	var rc catalog.PutResult
	l := &lostFlip{armed: true, then: func() {
		rc = catalogtest.MustPut(t, newer, "id", catalogtest.Discover(c, 2*time.Minute))
	}}
	lossy := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(context.Background()), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: l}
		o.Retryer = awsconf.NewRetryer(awsconf.MaxAttempts, fastBackoff)
	})
	s := catalog.NewDynamo(catalogtest.Strict(t, lossy), table) // its own: the flip's lock is held during then
	rb := catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Minute))
	if !rb.Superseded || rb.Version != rc.Version {
		t.Fatalf("Put whose flip was replaced unseen = %+v, want superseded by %s", rb, rc.Version)
	}
	if diff := cmp.Diff(catalogtest.ChangesOf(nil, nil, []string{"tool-2"}), rc.Changes); diff != "" {
		t.Errorf("the newer Put's changes, over the unseen flip (-want +got):\n%s", diff)
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), c)
	catalogtest.AssertOnlyVersion(t, s, "id", rc.Version)
	assertNoOrphans(t, newer, client, table, "id")
}

// TestChunkedManifests runs changes over manifests split into many items
// (100 bytes each here; 300,000 in production): each version reads whole,
// Lookup without the index reads the chunks, and retiring a version
// deletes its chunks with it.
func TestChunkedManifests(t *testing.T) {
	t.Parallel()
	s, c, client, table := newCounted(t, catalog.WithManifestChunkBytes(100), catalog.WithNameIndexMax(1))
	ctx := context.Background()
	l := catalogtest.Listing(40, "a")
	l.Tools[5].Name = "ns.tool-5" // a mapped model name
	l.Tools[6].Annotations = &mcp.Annotations{IdempotentHint: new(bool)}
	step := 0
	put := func(l mcp.Listing) catalog.PutResult {
		t.Helper()
		res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(l, time.Duration(step)*time.Minute))
		step++
		catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), l)
		catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
		assertNoOrphans(t, s, client, table, "id")
		return res
	}
	put(l)
	if n := len(tableKeys(t, client, table)); n < 1+40+1+10 { // head, tools, marker, chunks
		t.Fatalf("%d items: the manifest was not split", n)
	}
	l.Tools = slices.Clone(l.Tools)
	l.Tools[3] = catalogtest.Tool("tool-3", "b")
	if res := put(l); !cmp.Equal(catalogtest.ChangesOf(nil, nil, []string{"tool-3"}), res.Changes) {
		t.Errorf("change one: changes %+v", res.Changes)
	}
	l.Tools = append(slices.Clone(l.Tools[3:]), catalogtest.Tool("new", "a"))
	res := put(l)
	if want := catalogtest.ChangesOf([]string{"new"}, []string{"tool-0", "tool-1", "tool-2"}, nil); !cmp.Equal(want, res.Changes) {
		t.Errorf("add one, remove three: changes %+v", res.Changes)
	}
	models := catalogtest.ModelNames(catalogtest.MustGet(t, s, "id").Tools)
	for _, tc := range []struct {
		name string
		want catalog.Membership
		reqs map[string]int
	}{
		{"tool-6", catalog.Membership{Found: true, Annotations: &mcp.Annotations{IdempotentHint: new(bool)}}, map[string]int{"GetItem": 2, "Query": 1}},
		{models["ns.tool-5"], catalog.Membership{Found: true, Name: "ns.tool-5"}, map[string]int{"GetItem": 2, "Query": 2}},
		{"tool-0", catalog.Membership{}, map[string]int{"GetItem": 2, "Query": 1}},
	} {
		c.take()
		got, err := s.Lookup(ctx, "id", tc.name)
		if err != nil {
			t.Fatal(err)
		}
		tc.want.Version, tc.want.ProtocolVersion = res.Version, "2025-11-25"
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Lookup(%s) (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.reqs, c.take()); diff != "" { // head, marker, chunks (and the partition)
			t.Errorf("Lookup(%s): requests (-want +got):\n%s", tc.name, diff)
		}
	}
}
