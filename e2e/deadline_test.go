package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/rietest"
)

// TestDeadlineReturnsUnfinishedRecords gives the call function a deadline
// shorter than a batch's work: one record at a time, each tool call taking
// 2.5 s, a 6 s function timeout and a 2 s reserve. The first record
// finishes; the last cannot get a useful budget and is not started; every
// record that did not finish comes back as a batch item failure, and the
// invocation answers before the RIE's timeout.
func TestDeadlineReturnsUnfinishedRecords(t *testing.T) {
	slow := mcptest.NewServer(t, mcptest.Options{})
	s := newStack(t, stackOptions{
		allow:   []string{allowOnly(t, slow.URL)},
		timeout: 6 * time.Second,
		env:     []string{"MCPFN_BATCH_CONCURRENCY=1", "MCPFN_RESERVE=2s", "MCPFN_OPERATION_TIMEOUT=3900ms"}, // 2s + 3.9s < 6s: startup refuses an operation timeout the deadline never lets run out
	})
	const records = 3
	var bodies []any
	for i := range records {
		bodies = append(bodies, map[string]any{
			"server_url": slow.URL, "tool_name": "slow", "arguments": map[string]any{"ms": 2500},
			"tool_use_id": fmt.Sprintf("toolu_slow_%d", i),
		})
	}
	start := time.Now()
	res := invoke(t, s.call, sqsEvent(t, bodies...))
	elapsed := time.Since(start)
	if res.ErrorType == rietest.TimedOutType {
		t.Fatalf("the invocation hit the function timeout instead of returning the unfinished records:\n%s", strings.Join(res.Logs, "\n"))
	}
	if elapsed >= 6*time.Second {
		t.Errorf("the invocation took %s, not less than the 6s function timeout", elapsed)
	}
	failed := batchFailures(t, res)
	if slices.Contains(failed, "msg-0") {
		t.Errorf("batch item failures %v include msg-0, which had the whole budget", failed)
	}
	if !slices.Contains(failed, fmt.Sprintf("msg-%d", records-1)) {
		t.Errorf("batch item failures %v lack the last record, which cannot have finished", failed)
	}
	if want := records - 1; len(failed) != want {
		t.Errorf("batch item failures %v, want %d: all but the first", failed, want)
	}

	outcomes := map[string]string{}
	for _, sum := range summaries(res.Logs) {
		outcomes[sum.WorkItem] = sum.Outcome
	}
	if outcomes["msg-0"] != "succeeded" || outcomes[fmt.Sprintf("msg-%d", records-1)] != "not_started" {
		t.Errorf("outcomes %v, want msg-0 succeeded and the last not_started", outcomes)
	}
	if n := slow.CallCount("slow"); n < 1 || n >= records {
		t.Errorf("the slow tool ran %d times, want at least once and fewer than %d: unstarted records never reach the server", n, records)
	}
}
