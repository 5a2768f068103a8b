package e2e

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/shared/rietest"
)

// The memory bound (issue: a memory bound for the whole instance): no
// function's runtime passes 75 % of its memory, for a full batch at the
// largest allowed concurrency, whatever the servers answer.
const (
	memoryMB    = 512
	batchSize   = 10 // the template's BatchSize, the largest BatchConcurrency
	memoryLine  = memoryMB << 20 * 3 / 4
	memoryLimit = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512"
)

func memoryStack(t *testing.T, url string) *stack {
	t.Helper()
	return newStack(t, stackOptions{
		allow: []string{allowOnly(t, url)},
		// The function's timeout is a margin, not what is measured: ten
		// items share seven slots, so the last three start when the first
		// seven end, which on a machine running two suites at once took
		// 67 s of a 90 s timeout (near-budget listings).
		timeout: 180 * time.Second,
		env:     []string{memoryLimit, fmt.Sprintf("MCPFN_BATCH_CONCURRENCY=%d", batchSize)},
	})
}

// checkPeak fails t when f's runtime passed the memory line.
func checkPeak(t *testing.T, f *rietest.Function) {
	t.Helper()
	peak, err := f.RuntimePeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %.1f MiB, line %.1f MiB (75 %% of %d MB)", float64(peak)/(1<<20), float64(memoryLine)/(1<<20), memoryMB)
	if peak >= memoryLine {
		t.Errorf("peak RSS %d bytes, at or over 75 %% of %d MB (%d bytes)", peak, memoryMB, memoryLine)
	}
}

// runBatch sends a batch of batchSize bodies to f, checks every record
// ended as want (with errType), that failed records, and only they, came
// back, and that the runtime stayed under the line.
func runBatch(t *testing.T, f *rietest.Function, body func(i int) any, want, errType string) {
	t.Helper()
	var bodies []any
	for i := range batchSize {
		bodies = append(bodies, body(i))
	}
	res := invoke(t, f, sqsEvent(t, bodies...))
	wantFailures := 0
	if want == "requeued" {
		wantFailures = batchSize
	}
	if got := batchFailures(t, res); len(got) != wantFailures {
		t.Errorf("batch item failures %v, want %d", got, wantFailures)
	}
	sums := summaries(res.Logs)
	for _, sum := range sums {
		if sum.Outcome != want || sum.ErrorType != errType {
			t.Errorf("%s: outcome %s (%s), want %s (%s)", sum.WorkItem, sum.Outcome, sum.ErrorType, want, errType)
		}
	}
	if len(sums) != batchSize {
		t.Errorf("%d summary lines, want %d", len(sums), batchSize)
	}
	checkPeak(t, f)
}

// TestMemoryNearBudgetListings: a batch of ten valid listings just inside
// the connection budget, in each format, is stored whole, within the line.
func TestMemoryNearBudgetListings(t *testing.T) {
	for _, format := range bench.Formats {
		t.Run(format, func(t *testing.T) {
			srv := httptest.NewServer(bench.NearLimitHandler(format))
			defer srv.Close()
			s := memoryStack(t, srv.URL)
			runBatch(t, s.discover, func(i int) any {
				return map[string]string{"catalog_id": fmt.Sprintf("near-%d", i), "server_url": srv.URL}
			}, "succeeded", "")
		})
	}
}

// TestMemoryHostileAnswers: ten 1 GiB answers, in each format, fail as
// protocol errors (retried: a later delivery may meet a mended server)
// within the line.
func TestMemoryHostileAnswers(t *testing.T) {
	for _, format := range bench.Formats {
		t.Run(format, func(t *testing.T) {
			srv := httptest.NewServer(bench.HostileHandler(format, bench.AttackBytes))
			defer srv.Close()
			s := memoryStack(t, srv.URL)
			runBatch(t, s.discover, func(i int) any {
				return map[string]string{"catalog_id": fmt.Sprintf("hostile-%d", i), "server_url": srv.URL}
			}, "requeued", "mcp_protocol_error")
		})
	}
}

// TestMemoryInflatingAnswers: ten answers inside the wire budget that
// would decode to some seventy times their size, in each format, fail as
// protocol errors within the line.
func TestMemoryInflatingAnswers(t *testing.T) {
	for _, format := range bench.Formats {
		t.Run(format, func(t *testing.T) {
			srv := httptest.NewServer(bench.InflatingHandler(format, 7<<20))
			defer srv.Close()
			s := memoryStack(t, srv.URL)
			runBatch(t, s.discover, func(i int) any {
				return map[string]string{"catalog_id": fmt.Sprintf("inflating-%d", i), "server_url": srv.URL}
			}, "requeued", "mcp_protocol_error")
		})
	}
}

// TestMemoryNearLimitResults: ten call results just inside the connection
// budget, in each format, are answered within the line.
func TestMemoryNearLimitResults(t *testing.T) {
	for _, format := range bench.Formats {
		t.Run(format, func(t *testing.T) {
			srv := httptest.NewServer(bench.NearLimitHandler(format))
			defer srv.Close()
			s := memoryStack(t, srv.URL)
			runBatch(t, s.call, func(int) any {
				return map[string]any{"server_url": srv.URL, "tool_name": "big", "arguments": map[string]any{}}
			}, "succeeded", "")
		})
	}
}
