package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

func TestRefreshInterval(t *testing.T) {
	secs := func(n time.Duration) *time.Duration { d := n * time.Second; return &d }
	tests := []struct {
		name  string
		value any // refresh_interval_seconds; nil: absent
		want  *time.Duration
		err   string
	}{
		{name: "absent keeps the recorded interval"},
		{name: "off the schedule", value: 0, want: secs(0)},
		{name: "the least", value: 60, want: secs(60)},
		{name: "a week, the most", value: 604800, want: secs(604800)},
		{name: "under a minute", value: 59, err: "refresh_interval_seconds is 59: want 0 (off the schedule) or 60 to 604800"},
		{name: "over a week", value: 604801, err: "refresh_interval_seconds is 604801: want 0 (off the schedule) or 60 to 604800"},
		{name: "negative", value: -60, err: "refresh_interval_seconds is -60: want 0 (off the schedule) or 60 to 604800"},
		{name: "not an integer", value: 60.5, err: `field "refresh_interval_seconds": want int64, got JSON number 60.5`},
		{name: "a string", value: "3600", err: `field "refresh_interval_seconds": want int64, got JSON string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.Invoke(t, request(map[string]any{"refresh_interval_seconds": tt.value}))
			if tt.err != "" {
				if got.Error == nil || got.Error.Type != "invalid_request_error" || got.Error.Message != tt.err {
					t.Errorf("error = %+v, want invalid_request_error %q", got.Error, tt.err)
				}
				return
			}
			if got.Error != nil {
				t.Fatal(got.Error)
			}
			puts := e.store.puts["example"]
			if len(puts) != 1 || puts[0].Schedule == nil {
				t.Fatalf("puts %+v, want one with a schedule", puts)
			}
			sc := puts[0].Schedule
			if sc.ServerURL != serverURL || !cmp.Equal(tt.want, sc.Interval) {
				t.Errorf("schedule %+v (interval %v), want %s every %v", sc, sc.Interval, serverURL, tt.want)
			}
		})
	}
}

func TestFailureBacksOff(t *testing.T) {
	e := newEnv(t)
	e.server.Err = errors.New("dial tcp: connection refused")
	got := e.Invoke(t, request(nil))
	if got.Error == nil || got.Error.Type != "mcp_connection_failed_error" {
		t.Fatalf("error = %+v, want mcp_connection_failed_error", got.Error)
	}
	if e.schedule.failures["example"] != 1 {
		t.Errorf("backoff records %v, want one for example", e.schedule.failures)
	}
	sum := got.Summaries[0]
	if sum["failures"] != float64(1) || sum["retry_after"] != "2026-12-01T14:00:00Z" {
		t.Errorf("summary %v lacks the backoff", sum)
	}

	// A malformed request records nothing.
	e.Invoke(t, request(map[string]any{"refresh_interval_seconds": 1}))
	if len(e.schedule.failures) != 1 {
		t.Errorf("a malformed request backed off: %v", e.schedule.failures)
	}
}

func TestSweepEvent(t *testing.T) {
	e := newEnv(t)
	got := e.Invoke(t, []byte(`{"sweep": {}}`))
	if got.Error != nil {
		t.Fatal(got.Error)
	}
	if want := `{"swept":{"due":3,"enqueued":2,"backing_off":1}}`; string(got.Result) != want {
		t.Errorf("result %s, want %s", got.Result, want)
	}
	if len(e.queue.sent) != 2 || len(e.server.Configs()) != 0 || len(e.store.puts) != 0 {
		t.Errorf("sent %v, connected %d times, stored %v; want the sweep's 2 sends only", e.queue.sent, len(e.server.Configs()), e.store.puts)
	}
	metrics := e.Metrics.Records()
	var emf map[string]any
	for _, m := range metrics {
		if _, ok := m[schedule.MetricDue]; ok {
			emf = m
		}
	}
	want := map[string]any{schedule.MetricDue: 3.0, schedule.MetricEnqueued: 2.0, schedule.MetricBackingOff: 1.0, schedule.MetricOverdue3x: 1.0}
	for k, v := range want {
		if emf[k] != v {
			t.Errorf("EMF %s = %v, want %v (lines %v)", k, emf[k], v, metrics)
		}
	}
	sum := got.Summaries[0]
	if sum["event"] != "sweep" || sum["due"] != 3.0 || sum["overdue_3x"] != 1.0 || sum["complete"] != true {
		t.Errorf("summary %v, want the sweep's counts", sum)
	}
}

func TestSweepEventIsExact(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    string // the invalid_request_error message, in part
	}{
		{"another field", `{"sweep": {}, "catalog_id": "example"}`, `unknown field "catalog_id"`},
		{"null", `{"sweep": null}`, `sweep must be an empty object`},
		{"a field inside", `{"sweep": {"now": 1}}`, `unknown field "now"`},
		{"not an object", `{"sweep": true}`, `field "sweep"`},
		{"twice", `{"sweep": {}, "sweep": {}}`, `duplicate field "sweep"`},
		{"another case", `{"Sweep": {}}`, `unknown field "Sweep"`}, // not a sweep: a discover request with an unknown field
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.Invoke(t, []byte(tt.payload))
			if got.Error == nil || got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, tt.want) {
				t.Errorf("error = %+v, want invalid_request_error with %q", got.Error, tt.want)
			}
			if e.schedule.sweeps != 0 {
				t.Error("swept")
			}
		})
	}
}

func TestSweepRefused(t *testing.T) {
	tests := []struct {
		name    string
		tweak   func(e *env)
		payload []byte
		want    string
	}{
		{"no discover queue", func(e *env) { e.handler.Queue = nil }, []byte(`{"sweep":{}}`), "set MCPFN_DISCOVER_QUEUE_URL"},
		{"no schedule (directory store)", func(e *env) { e.handler.Schedule = nil }, []byte(`{"sweep":{}}`), "set MCPFN_CATALOG_TABLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.tweak(e)
			got := e.Invoke(t, tt.payload)
			if got.Error == nil || got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, tt.want) {
				t.Errorf("error = %+v, want invalid_request_error naming %q", got.Error, tt.want)
			}
		})
	}

	t.Run("with a task token", func(t *testing.T) {
		e := newEnv(t)
		got := e.Invoke(t, []byte(`{"sweep": {}, "task_token": "AQCEtoken"}`))
		if e.schedule.sweeps != 0 || len(got.TaskReports) != 1 || got.TaskReports[0].Error != "invalid_request_error" {
			t.Errorf("swept %d times, task reports %+v; want the refusal reported to the task, unswept", e.schedule.sweeps, got.TaskReports)
		}
	})
	t.Run("from a queue", func(t *testing.T) {
		e := newEnv(t)
		got := e.Invoke(t, runnertest.Payload(runnertest.SQSEvent(`{"sweep":{}}`)))
		if e.schedule.sweeps != 0 || len(got.DeadLetters) != 1 {
			t.Errorf("swept %d times, dead letters %v; want the record dead-lettered unswept", e.schedule.sweeps, got.DeadLetters)
		}
	})
	t.Run("the schedule fails", func(t *testing.T) {
		e := newEnv(t)
		e.schedule.err = errors.New("throttled")
		got := e.Invoke(t, []byte(`{"sweep":{}}`))
		if got.Error == nil || got.Error.Type != "internal_error" || strings.Contains(got.Error.Message, "throttled") {
			t.Errorf("error = %+v, want internal_error without the cause", got.Error)
		}
	})
}
