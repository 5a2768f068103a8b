package runner_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestOperationMetric: each MCP request of a work item, traced or not, is
// one mcp.client.operation.duration line in seconds by Function, Method and
// Outcome, the server's origin a property only (no path or query).
func TestOperationMetric(t *testing.T) {
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	metrics := &runnertest.Lines{}
	proc := runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
		c, err := mcp.Connect(ctx, mcp.Config{URL: srv.URL + "?k=metric-canary", HTTPClient: srv.Client()})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
			return nil, err
		}
		return c.CallTool(ctx, "fail", nil)
	})
	r, err := runner.NewRunner(runner.Config{Function: "call", Tasks: &runnertest.Tasks{}, Queue: &runnertest.Queue{},
		Logger: slog.New(slog.DiscardHandler), Metrics: metrics}, proc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := runnertest.Context(t.Context(), "req-op", time.Minute)
	defer cancel()
	if _, err := r.Handle(ctx, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}

	u, _ := url.Parse(srv.URL)
	type line struct{ Method, Outcome, ErrorType, Server string }
	var calls []line
	for _, rec := range metrics.Records() {
		d, ok := rec[runner.MetricOperationDuration].(float64)
		if !ok {
			continue
		}
		if d <= 0 || d > 60 {
			t.Errorf("%v: duration %v s", rec["Method"], d)
		}
		want := map[string]any{"Timestamp": rec["_aws"].(map[string]any)["Timestamp"], "CloudWatchMetrics": []any{map[string]any{
			"Namespace": "mcpfn", "Dimensions": []any{[]any{"Function", "Method", "Outcome"}},
			"Metrics": []any{map[string]any{"Name": runner.MetricOperationDuration, "Unit": "Seconds"}},
		}}}
		if diff := cmp.Diff(want, rec["_aws"]); diff != "" || rec["Function"] != "call" {
			t.Errorf("EMF directive of %v (-want +got):\n%s", rec, diff)
		}
		b, _ := json.Marshal(rec)
		if strings.Contains(string(b), "metric-canary") || strings.Contains(string(b), "/mcp") {
			t.Errorf("metric line holds the URL's path or query: %s", b)
		}
		if rec["Method"] == "tools/call" {
			et, _ := rec["ErrorType"].(string)
			calls = append(calls, line{rec["Method"].(string), rec["Outcome"].(string), et, rec["Server"].(string)})
		}
	}
	origin := u.Scheme + "://" + u.Host
	want := []line{{"tools/call", runner.OperationOK, "", origin}, {"tools/call", runner.OperationError, mcp.ErrorTypeToolError, origin}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("tools/call lines (-want +got):\n%s", diff)
	}
}
