package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/awstest"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	twenty := ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", ms(7), Summary{N: 1, Median: 7 * time.Millisecond, P95: 7 * time.Millisecond, Min: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{"even count takes the lower median", ms(4, 1, 3, 2), Summary{N: 4, Median: 2 * time.Millisecond, P95: 4 * time.Millisecond, Min: time.Millisecond, Max: 4 * time.Millisecond}},
		// nearest rank: ceil(0.95*20) = 19th of 20
		{"twenty, unsorted", twenty, Summary{N: 20, Median: 10 * time.Millisecond, P95: 19 * time.Millisecond, Min: time.Millisecond, Max: 20 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]time.Duration(nil), tc.in...)
			if diff := cmp.Diff(tc.want, Summarize(tc.in)); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("Summarize modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b time.Duration
		want float64
	}{
		{"equal", time.Second, time.Second, 1},
		{"half", time.Second, 2 * time.Second, 0.5},
		{"zero anchor", time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ratio(tc.a, tc.b); got != tc.want {
				t.Errorf("Ratio(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestMaxRSS(t *testing.T) {
	for _, tc := range []struct {
		name    string
		report  string
		want    int64
		wantErr bool
	}{
		{"gnu time -v", "\tCommand being timed: \"memchild\"\n\tMaximum resident set size (kbytes): 28060\n\tExit status: 0\n", 28060 << 10, false},
		{"killed child", "Command terminated by signal 9\n\tMaximum resident set size (kbytes): 4802520\n", 4802520 << 10, false},
		{"no such line", "\tExit status: 0\n", 0, true},
		{"garbled number", "\tMaximum resident set size (kbytes): lots\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := maxRSS([]byte(tc.report))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("maxRSS = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseChild(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  MemoryResult
		out    string
		want   MemoryResult
		wantOK bool
	}{
		{
			name:   "done line wins",
			out:    "heap 16777216\nheap 33554432\ndone 41000000 40000000 mcp: response budget exceeded\n",
			want:   MemoryResult{Outcome: "mcp: response budget exceeded", Elapsed: 41 * time.Millisecond, PeakHeap: 40000000},
			wantOK: true,
		},
		{
			name:   "killed: last heap line, outcome kept",
			start:  MemoryResult{Outcome: "killed at the cap", Aborted: true},
			out:    "heap 16777216\nheap 1073741824\n",
			want:   MemoryResult{Outcome: "killed at the cap", Aborted: true, PeakHeap: 1 << 30},
			wantOK: true,
		},
		{
			name: "no outcome",
			out:  "panic: boom\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.start
			ok := parseChild([]byte(tc.out), &got)
			if ok != tc.wantOK {
				t.Errorf("parseChild ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseChild (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllowEntry(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:8080/mcp", "127.0.0.1/32:8080"},
		{"http://127.0.0.1:65535", "127.0.0.1/32:65535"},
	} {
		if got := AllowEntry(tc.url); got != tc.want {
			t.Errorf("AllowEntry(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// fakeDynamo answers every request with an empty output.
type fakeDynamo struct{}

func (fakeDynamo) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (fakeDynamo) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (fakeDynamo) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

func (fakeDynamo) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func TestCountingDynamo(t *testing.T) {
	ctx := context.Background()
	c := &CountingDynamo{Next: fakeDynamo{}}
	put := types.WriteRequest{PutRequest: &types.PutRequest{}}
	del := types.WriteRequest{DeleteRequest: &types.DeleteRequest{}}
	_, _ = c.GetItem(ctx, &dynamodb.GetItemInput{})
	_, _ = c.Query(ctx, &dynamodb.QueryInput{})
	_, _ = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{})
	_, _ = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": {put, put, del}}})
	_, _ = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": {put}}})

	got := c.Take()
	want := Counts{Requests: map[string]int{"GetItem": 1, "Query": 1, "UpdateItem": 1, "BatchWriteItem": 2}, ItemsWritten: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	if got.Total() != 5 || got.Writes() != 3 {
		t.Errorf("Total, Writes = %d, %d; want 5, 3", got.Total(), got.Writes())
	}
	if diff := cmp.Diff(Counts{Requests: map[string]int{}}, c.Take()); diff != "" {
		t.Errorf("Take after Take (-want +got):\n%s", diff)
	}
}

func TestStoreCatalog(t *testing.T) {
	a, b := StoreCatalog(StoreTools, ""), StoreCatalog(StoreTools, "(changed)")
	if len(a.Tools) != StoreTools {
		t.Fatalf("%d tools, want %d", len(a.Tools), StoreTools)
	}
	names := map[string]bool{}
	for _, tool := range a.Tools {
		names[tool.Name] = true
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Fatalf("%s: schema %s is not an object schema (%v)", tool.Name, tool.InputSchema, err)
		}
	}
	if len(names) != StoreTools {
		t.Errorf("%d distinct names, want %d", len(names), StoreTools)
	}
	diffs := 0
	for i := range a.Tools {
		if !cmp.Equal(a.Tools[i], b.Tools[i]) {
			diffs++
		}
	}
	if diffs != 1 {
		t.Errorf("the variant differs in %d tools, want 1", diffs)
	}
	c := allChanged(b, "(all)")
	for i := range b.Tools {
		if c.Tools[i].Name != b.Tools[i].Name || c.Tools[i].Description == b.Tools[i].Description {
			t.Fatalf("allChanged: tool %d is %q %q, want %q with another description", i, c.Tools[i].Name, c.Tools[i].Description, b.Tools[i].Name)
		}
	}
}

// TestStoreCost runs the store section's Puts against moto and holds
// them to the section's targets: an unchanged Put is one write, one
// changed tool at most 5 write requests and 10 items, k changed tools at
// most 2k + 5 items.
func TestStoreCost(t *testing.T) {
	ctx := context.Background()
	m := awstest.StartMoto(t)
	cases, err := StoreCost(ctx, dynamodb.NewFromConfig(m.Config(ctx)))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 4 {
		t.Fatalf("%d cases, want 4", len(cases))
	}
	for i, c := range cases {
		t.Logf("%s: %v, %d items written", c.Name, c.Counts.Requests, c.Counts.ItemsWritten)
		if c.Result.ToolCount != StoreTools || c.Result.Unchanged != (i == 1) {
			t.Errorf("%s: Put = %+v", c.Name, c.Result)
		}
	}
	if w := cases[1].Counts.Writes(); w != 1 {
		t.Errorf("unchanged: %d writes, want 1", w)
	}
	if c := cases[2].Counts; c.Writes() > 5 || c.ItemsWritten > 10 {
		t.Errorf("one change: %d writes, %d items; want at most 5 and 10", c.Writes(), c.ItemsWritten)
	}
	if c := cases[3].Counts; c.ItemsWritten > 2*StoreTools+5 {
		t.Errorf("all changed: %d items, want at most %d", c.ItemsWritten, 2*StoreTools+5)
	}
}

func TestHostileHandlerAnswersExactlySizeBytes(t *testing.T) {
	const size = 1 << 20
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			srv, err := Serve(HostileHandler(format, size))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Content-Type"); got != format {
				t.Errorf("Content-Type = %q, want %q", got, format)
			}
			if resp.ContentLength != -1 {
				t.Errorf("ContentLength = %d, want chunked (-1)", resp.ContentLength)
			}
			if len(body) != size {
				t.Errorf("answer is %d bytes, want %d", len(body), size)
			}
			payload := body
			if format == FormatSSE {
				var ok bool
				if payload, ok = bytes.CutPrefix(payload, []byte("event: message\ndata: ")); !ok {
					t.Fatalf("SSE answer starts %.40q", body)
				}
				if payload, ok = bytes.CutSuffix(payload, []byte("\n\n")); !ok {
					t.Fatalf("SSE answer does not end its event")
				}
			}
			var msg struct {
				ID     int `json:"id"`
				Result struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(payload, &msg); err != nil {
				t.Fatalf("answer is not a JSON-RPC response: %v", err)
			}
			if msg.ID != 7 || len(msg.Result.Tools) != 1 || msg.Result.Tools[0].Name != "big" {
				t.Errorf("answer id %d, tools %+v; want id 7 and one tool named big", msg.ID, msg.Result.Tools)
			}
		})
	}
}

func TestCountRoundTripsAttributesEachStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		c    RoundTripCase
		want map[string][]string
	}{
		{
			c:    RoundTripCase{Era: Stateless, Client: item.Ours},
			want: map[string][]string{"connect": {"server/discover"}, "list": {"tools/list"}, "call": {"tools/call"}, "close": {}},
		},
		{
			c:    RoundTripCase{Era: Legacy, Client: item.Ours, Hint: EraVersion[Legacy]},
			want: map[string][]string{"connect": {"initialize", "notifications/initialized"}, "list": {"tools/list"}, "call": {"tools/call"}, "close": {"DELETE"}},
		},
	} {
		t.Run(fmt.Sprintf("%s %s hint %q", tc.c.Era, tc.c.Client, tc.c.Hint), func(t *testing.T) {
			rt, err := CountRoundTrips(ctx, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rt.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiscoverBatch(t *testing.T) {
	raw, err := DiscoverBatch([]string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	for _, r := range ev.Records {
		var body map[string]string
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		got = append(got, body)
		if r.EventSource != "aws:sqs" || r.MessageId == "" || r.ReceiptHandle == "" {
			t.Errorf("record %+v lacks SQS fields", r)
		}
	}
	want := []map[string]string{
		{"catalog_id": "bench-batch-00", "server_url": "http://127.0.0.1:1/mcp"},
		{"catalog_id": "bench-batch-01", "server_url": "http://127.0.0.1:2/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}
