package runner_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// TestNothingSecretLeaves: the token and the URL's query never reach the
// logs, metrics, wire errors, DLQ attributes or task causes.
func TestNothingSecretLeaves(t *testing.T) {
	f := newFixture(t, runner.Config{DLQURL: dlqURL})
	ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
	defer cancel()
	var seen []string
	for _, kind := range wire.ErrorTypes {
		_, err := f.runner.Handle(ctx, json.RawMessage(body(string(kind))))
		seen = append(seen, fmt.Sprint(err))
		_, err = f.runner.Handle(ctx, json.RawMessage(body(string(kind), "task_token", "t")))
		seen = append(seen, fmt.Sprint(err))
	}
	var bodies []string
	for _, kind := range wire.ErrorTypes {
		bodies = append(bodies, body(string(kind)))
	}
	if _, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(bodies...))); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.queue.Sent() {
		seen = append(seen, fmt.Sprint(m.Attributes))
	}
	for _, r := range f.tasks.Reports() {
		seen = append(seen, r.Cause)
	}
	seen = append(seen, f.logs.String(), f.metrics.String())
	all := strings.Join(seen, "\n")
	for _, secret := range []string{"token-secret", "query-secret", "/mcp?"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q leaked:\n%s", secret, all)
		}
	}
	if !strings.Contains(f.logs.String(), `"server":"https://mcp.example.com"`) {
		t.Errorf("summary lines lack the server origin:\n%s", f.logs.String())
	}
}

func TestSummaryLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Function: "discover"})
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
		defer cancel()
		if _, err := f.runner.Handle(ctx, runnertest.Payload(runnertest.SQSEvent(body("mcp_protocol_error", "sleep", "1500ms")))); err != nil {
			t.Fatal(err)
		}
		sums := f.logs.Summaries()
		if len(sums) != 1 {
			t.Fatalf("summaries = %v, want 1", sums)
		}
		got := sums[0]
		delete(got, "time")
		want := map[string]any{
			"level":               "WARN",
			"msg":                 "work item",
			"function":            "discover",
			"cold_start":          true, // the runner's first invocation
			"request_id":          "req-1",
			"function_request_id": "req-1",
			"work_item":           "msg-0",
			"source":              "sqs",
			"task_token":          false,
			"server":              "https://mcp.example.com",
			"protocol_version":    "2025-11-25",
			"outcome":             "requeued",
			"error_type":          "mcp_protocol_error",
			"requests":            float64(3),
			"response_bytes":      float64(120),
			"duration_ms":         float64(1500),
			"error":               "mcp_protocol_error: mcp_protocol_error happened: cause mentions https://mcp.example.com and [redacted]",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summary (-want +got):\n%s", diff)
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, runner.Config{Function: "call"})
		ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
		defer cancel()
		if _, err := f.runner.Handle(ctx, json.RawMessage(body("mcp_egress_denied_error", "sleep", "250ms"))); err == nil {
			t.Fatal("Handle succeeded, want an error")
		}
		recs := f.metrics.Records()
		if len(recs) != 2 || recs[0]["ColdStart"] != float64(1) {
			t.Fatalf("metric lines = %v, want the ColdStart line and the item's", recs)
		}
		want := map[string]any{
			"_aws": map[string]any{
				"Timestamp": float64(time.Now().UnixMilli()),
				"CloudWatchMetrics": []any{
					map[string]any{
						"Namespace":  "mcpfn",
						"Dimensions": []any{[]any{"Function"}},
						"Metrics": []any{
							map[string]any{"Name": "WorkItems", "Unit": "Count"},
							map[string]any{"Name": "NotStarted", "Unit": "Count"},
							map[string]any{"Name": "Duration", "Unit": "Milliseconds"},
							map[string]any{"Name": "ResponseBytes", "Unit": "Bytes"},
						},
					},
					map[string]any{
						"Namespace":  "mcpfn",
						"Dimensions": []any{[]any{"Function", "ErrorType"}},
						"Metrics":    []any{map[string]any{"Name": "Failures", "Unit": "Count"}},
					},
				},
			},
			"Function":      "call",
			"Outcome":       "failed",
			"ErrorType":     "mcp_egress_denied_error",
			"WorkItems":     float64(1),
			"NotStarted":    float64(0),
			"Failures":      float64(1),
			"Duration":      float64(250),
			"ResponseBytes": float64(120),
		}
		if diff := cmp.Diff(want, recs[1]); diff != "" {
			t.Errorf("EMF line (-want +got):\n%s", diff)
		}
	})
}
