package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// BatchSize is the number of records in the batch-concurrency run.
const BatchSize = 10

// SlowListing is how long each batch server takes to answer tools/list.
const SlowListing = time.Second

// BatchResult is one SQS batch invocation of discover: its wall time and the
// duration_ms of each work item's summary line.
type BatchResult struct {
	Concurrency int
	Wall        time.Duration
	Items       []time.Duration
}

// Sum returns the sum of the items' durations.
func (b BatchResult) Sum() time.Duration {
	var s time.Duration
	for _, d := range b.Items {
		s += d
	}
	return s
}

// Longest returns the longest item.
func (b BatchResult) Longest() time.Duration {
	var m time.Duration
	for _, d := range b.Items {
		m = max(m, d)
	}
	return m
}

// SlowServers starts n stateless fixture servers whose tools/list answers
// after delay, and returns their URLs, the egress allow-list entries for
// them, and a function that stops them.
func SlowServers(n int, delay time.Duration) (urls, allow []string, stop func(), err error) {
	var servers []*Server
	stop = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for range n {
		h, _ := mcptest.NewHandler(FixtureOptions(Stateless))
		mux := http.NewServeMux()
		mux.Handle("/mcp", delayList(h, delay))
		s, err := Serve(mux)
		if err != nil {
			stop()
			return nil, nil, nil, err
		}
		servers = append(servers, s)
		urls = append(urls, s.URL+"/mcp")
		allow = append(allow, AllowEntry(s.URL))
	}
	return urls, allow, stop, nil
}

// AllowEntry returns the egress allow-list entry (guard.EnvAllowList) for
// the port of url, a http://127.0.0.1:PORT/... address.
func AllowEntry(url string) string {
	hostPort, _, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	_, port, _ := strings.Cut(hostPort, ":")
	return "127.0.0.1/32:" + port
}

// delayList delays every tools/list request by d.
func delayList(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, err := mcptest.Method(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if method == "tools/list" {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// DiscoverBatch builds an SQS event of one discover record per URL.
func DiscoverBatch(urls []string) ([]byte, error) {
	var bodies []string
	for i, u := range urls {
		body, err := json.Marshal(map[string]string{"catalog_id": fmt.Sprintf("bench-batch-%02d", i), "server_url": u})
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, string(body))
	}
	return json.Marshal(SQSEvent(bodies...))
}

// SQSEvent is an SQS event with one record per body, as Lambda delivers it.
func SQSEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, body := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      fmt.Sprintf("bench-%02d", i),
			ReceiptHandle:  fmt.Sprintf("bench-receipt-%02d", i),
			Body:           body,
			Attributes:     map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1764453600000"},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:mcpfn-bench",
			AWSRegion:      "us-east-1",
		})
	}
	return ev
}

// RunBatch invokes f (discover under the RIE) with event once, checks that
// no record failed, and collects the wall time and each work item's
// duration_ms from its summary lines.
func RunBatch(ctx context.Context, f *localstack.Function, event []byte, concurrency, records int) (BatchResult, error) {
	start := time.Now()
	res, err := f.Invoke(ctx, event)
	wall := time.Since(start)
	if err != nil {
		return BatchResult{}, err
	}
	if res.ErrorType != "" {
		return BatchResult{}, fmt.Errorf("bench: batch failed: %s: %s", res.ErrorType, res.ErrorMessage)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(res.Payload, &resp); err != nil {
		return BatchResult{}, fmt.Errorf("bench: batch answer %s: %w", res.Payload, err)
	}
	if len(resp.BatchItemFailures) > 0 {
		return BatchResult{}, fmt.Errorf("bench: %d records failed: %s\n%s", len(resp.BatchItemFailures), res.Payload, strings.Join(res.Logs, "\n"))
	}
	out := BatchResult{Concurrency: concurrency, Wall: wall}
	for _, line := range res.Logs {
		var l struct {
			Msg        string `json:"msg"`
			Outcome    string `json:"outcome"`
			DurationMS *int64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "work item" || l.DurationMS == nil {
			continue
		}
		out.Items = append(out.Items, time.Duration(*l.DurationMS)*time.Millisecond)
	}
	if len(out.Items) != records {
		return BatchResult{}, fmt.Errorf("bench: %d work item lines, want %d:\n%s", len(out.Items), records, strings.Join(res.Logs, "\n"))
	}
	return out, nil
}
