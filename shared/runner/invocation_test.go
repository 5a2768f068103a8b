package runner_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestColdStart: every summary line of an instance's first invocation
// carries cold_start true, the next invocations' false; the ColdStart
// metric is written once, at the first.
func TestColdStart(t *testing.T) {
	f := newFixture(t, runner.Config{Function: "call"})
	for i, reqID := range []string{"req-1", "req-2", "req-3"} {
		ctx, cancel := runnertest.Context(t.Context(), reqID, time.Minute)
		event := runnertest.Payload(runnertest.SQSEvent(body("ok"), body("ok")))
		if i == 2 {
			event = []byte(body("ok")) // a direct invocation
		}
		if _, err := f.runner.Handle(ctx, event); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	type key struct {
		RequestID string
		ColdStart bool
	}
	var got []key
	for _, s := range f.logs.Summaries() {
		if s["function_request_id"] != s["request_id"] {
			t.Errorf("function_request_id %v, request_id %v: want the same", s["function_request_id"], s["request_id"])
		}
		cold, _ := s["cold_start"].(bool)
		id, _ := s["function_request_id"].(string)
		got = append(got, key{id, cold})
	}
	slices.SortStableFunc(got, func(a, b key) int { return strings.Compare(a.RequestID, b.RequestID) }) // a batch's items end in any order
	want := []key{{"req-1", true}, {"req-1", true}, {"req-2", false}, {"req-2", false}, {"req-3", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
	var coldStarts []any
	for _, rec := range f.metrics.Records() {
		if v, ok := rec["ColdStart"]; ok {
			coldStarts = append(coldStarts, v)
			if rec["Function"] != "call" {
				t.Errorf("ColdStart line %v: want Function call", rec)
			}
		}
	}
	if diff := cmp.Diff([]any{float64(1)}, coldStarts); diff != "" {
		t.Errorf("ColdStart metrics (-want +got):\n%s", diff)
	}
}

func TestTraceID(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	tests := []struct {
		name   string
		ctxVal string // aws-lambda-go's context value
		env    string // runner.EnvTraceID
		want   any    // nil: no xray_trace_id key
	}{
		{name: "none"},
		{name: "from the context", ctxVal: header, env: "Root=1-00000000-000000000000000000000000", want: "1-5759e988-bd862e3fe1be46a994272793"},
		{name: "from the environment", env: header, want: "1-5759e988-bd862e3fe1be46a994272793"},
		{name: "no Root", env: "Self=1-abc", want: "Self=1-abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(runner.EnvTraceID, tt.env)
			f := newFixture(t, runner.Config{Function: "discover"})
			ctx, cancel := runnertest.Context(t.Context(), "req-1", time.Minute)
			defer cancel()
			if tt.ctxVal != "" {
				//lint:ignore SA1029 the key aws-lambda-go uses
				ctx = context.WithValue(ctx, "x-amzn-trace-id", tt.ctxVal)
			}
			if _, err := f.runner.Handle(ctx, []byte(body("ok"))); err != nil {
				t.Fatal(err)
			}
			sums := f.logs.Summaries()
			if len(sums) != 1 {
				t.Fatalf("summaries = %v, want 1", sums)
			}
			if got := sums[0]["xray_trace_id"]; got != tt.want {
				t.Errorf("xray_trace_id = %v, want %v", got, tt.want)
			}
		})
	}
}
