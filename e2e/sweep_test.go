package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

// newDelayingProxy forwards every request to target after delay, or drops
// it when its client gives up first: a slow AWS endpoint on loopback.
func newDelayingProxy(t *testing.T, target string, delay time.Duration) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(u)
	forward.ErrorLog = log.New(io.Discard, "", 0) // a client that gave up
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
			forward.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// seedDue writes n scheduled heads due now, in the shape catalog.Put
// writes a head's schedule (no server URL: a sweep does not need it), with
// distinct due times (moto pages index entries of equal due time
// inconsistently). It returns their catalog ids.
func seedDue(t *testing.T, db *dynamodb.Client, table string, n int) []string {
	t.Helper()
	now := time.Now().Unix()
	var ids []string
	var writes []types.WriteRequest
	for i := range n {
		id := fmt.Sprintf("sweep-%04d", i)
		ids = append(ids, id)
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			catalog.PartitionKey:      &types.AttributeValueMemberS{Value: id},
			catalog.SortKey:           &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
			catalog.DueShardAttribute: &types.AttributeValueMemberS{Value: catalog.DueShard(id)},
			catalog.NextDueAttribute:  &types.AttributeValueMemberN{Value: strconv.FormatInt(now-60-int64(i), 10)},
			catalog.IntervalAttribute: &types.AttributeValueMemberN{Value: "3600"},
		}}})
	}
	batches := make(chan []types.WriteRequest)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range batches {
				for len(b) > 0 {
					out, err := db.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: b}})
					if err != nil {
						t.Error(err)
						return
					}
					b = out.UnprocessedItems[table]
				}
			}
		})
	}
	for lo := 0; lo < n; lo += catalog.MaxBatchItems {
		batches <- writes[lo:min(lo+catalog.MaxBatchItems, n)]
	}
	close(batches)
	wg.Wait()
	return ids
}

// stillDue counts the due index's entries due now, over every shard.
func stillDue(t *testing.T, db *dynamodb.Client, table string) int {
	t.Helper()
	due := 0
	for shard := range catalog.DueShards {
		p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
			TableName:                aws.String(table),
			IndexName:                aws.String(catalog.DueIndex),
			KeyConditionExpression:   aws.String("#ds = :ds AND #nd <= :now"),
			ExpressionAttributeNames: map[string]string{"#ds": catalog.DueShardAttribute, "#nd": catalog.NextDueAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":ds":  &types.AttributeValueMemberS{Value: strconv.Itoa(shard)},
				":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix(), 10)},
			},
			Select: types.SelectCount,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			due += int(out.Count)
		}
	}
	return due
}

// receiveAll receives and deletes every message of the queue at url and
// counts them by catalog id.
func receiveAll(t *testing.T, client *sqs.Client, url string, into map[string]int) int {
	t.Helper()
	total := 0
	for {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return total
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			var req struct {
				CatalogID string `json:"catalog_id"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &req); err != nil || req.CatalogID == "" {
				t.Fatalf("message %q: %v", aws.ToString(m.Body), err)
			}
			into[req.CatalogID]++
			total++
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := client.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			t.Fatal(err)
		}
	}
}

// sweepLine is what a sweep's summary line counts beside its answer.
type sweepLine struct {
	Msg        string `json:"msg"`
	Event      string `json:"event"`
	Unanswered *int   `json:"unanswered"`
	Stranded   *int   `json:"stranded"`
}

// sweepSummary is the unanswered and stranded counts of a sweep's summary
// line in logs; the test fails when there is none.
func sweepSummary(t *testing.T, logs []string) (unanswered, stranded int) {
	t.Helper()
	for _, l := range logs {
		var line sweepLine
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "work item" && line.Event == "sweep" && line.Unanswered != nil && line.Stranded != nil {
			return *line.Unanswered, *line.Stranded
		}
	}
	t.Fatalf("no sweep summary line with unanswered and stranded in:\n%s", strings.Join(logs, "\n"))
	return 0, 0
}

// TestSweepKeepsItsWord: 400 due catalogs, a 5 s function timeout and
// an SQS that takes 1 s a request, through the discover bootstrap under
// the RIE: a shard then sends one batch of 10 a sweep. (With 2,000 and
// 250 ms, moto's 16 shard queries, each a scan of the table, outlasted
// sweep after sweep on a loaded machine.) No sweep gets through them all; successive sweeps enqueue
// every catalog at most once, and each one not enqueued was counted
// (stranded, or unanswered with nothing in the queue); the queue holds
// what the sweeps enqueued so far, plus at most what went unanswered.
func TestSweepKeepsItsWord(t *testing.T) {
	const n, timeout = 400, 5 * time.Second
	moto := awstest.SharedMoto(t)
	proxy := newDelayingProxy(t, moto.Endpoint(), time.Second)
	s := newStack(t, stackOptions{
		timeout: timeout,
		env:     []string{"AWS_ENDPOINT_URL_SQS=" + proxy.URL, "MCPFN_RESERVE=2s"},
	})
	db := dynamodb.NewFromConfig(moto.Config(t.Context()))
	ids := seedDue(t, db, s.catalogTable, n)

	counts := map[string]int{}
	stalled := 0
	// Totals over the sweeps: a message whose send went unanswered may
	// reach the queue after that sweep's receive, so arrivals are checked
	// against what the sweeps reported so far, not sweep by sweep.
	var enqueued, unanswered, stranded, arrived int
	progress := time.Now()
	for sweep := 1; ; sweep++ {
		start := time.Now()
		res := invoke(t, s.discover, []byte(`{"sweep": {}}`))
		if took := time.Since(start); res.ErrorType != "" || took >= timeout {
			t.Fatalf("sweep %d: %s %s after %s; logs:\n%s", sweep, res.ErrorType, res.ErrorMessage, took, strings.Join(res.Logs, "\n"))
		}
		var out struct {
			Swept struct{ Due, Enqueued int } `json:"swept"`
		}
		if err := json.Unmarshal(res.Payload, &out); err != nil {
			t.Fatalf("sweep %d answered %s: %v", sweep, res.Payload, err)
		}
		got := receiveAll(t, s.sqs, s.discoverQueue, counts)
		u, st := sweepSummary(t, res.Logs)
		enqueued, unanswered, stranded, arrived = enqueued+out.Swept.Enqueued, unanswered+u, stranded+st, arrived+got
		t.Logf("sweep %d: due %d, enqueued %d, unanswered %d, stranded %d, arrived %d, in %s", sweep, out.Swept.Due, out.Swept.Enqueued, u, st, got, time.Since(start).Round(time.Millisecond))
		if arrived < enqueued || arrived > enqueued+unanswered {
			t.Errorf("after sweep %d: %d enqueued and %d unanswered in all, %d arrived in the queue", sweep, enqueued, unanswered, arrived)
		}
		if sweep == 1 && out.Swept.Enqueued == n {
			t.Fatal("the first sweep enqueued every catalog: the budget did not end mid-sweep")
		}
		if out.Swept.Due == 0 && stillDue(t, db, s.catalogTable) == 0 {
			break
		}
		// On a loaded machine moto answers slowly (it scans the table for
		// each of the 16 shards' queries) and a sweep may enqueue nothing;
		// eight in a row over two minutes mean the sweeps are stuck.
		stalled++
		if out.Swept.Enqueued > 0 {
			stalled, progress = 0, time.Now()
		}
		if stalled >= 8 && time.Since(progress) > 2*time.Minute {
			t.Fatalf("sweep %d: %d sweeps in a row over %s enqueued nothing, %d still due", sweep, stalled, time.Since(progress).Round(time.Second), stillDue(t, db, s.catalogTable))
		}
	}
	time.Sleep(time.Second) // a last unanswered send may still land
	arrived += receiveAll(t, s.sqs, s.discoverQueue, counts)
	if arrived > enqueued+unanswered {
		t.Errorf("%d enqueued and %d unanswered in all, %d arrived in the queue", enqueued, unanswered, arrived)
	}
	mayMiss := stranded + enqueued + unanswered - arrived
	missed := 0
	for _, id := range ids {
		switch counts[id] {
		case 0:
			missed++
		case 1:
		default:
			t.Errorf("%s enqueued %d times, want once", id, counts[id])
		}
	}
	if missed > mayMiss {
		t.Errorf("%d of %d catalogs never enqueued, and the sweeps counted %d stranded or unanswered: claims were dropped silently", missed, n, mayMiss)
	}
	if missed > 0 {
		t.Logf("%d catalogs wait one interval: the sweeps counted %d stranded or unanswered", missed, mayMiss)
	}
}
