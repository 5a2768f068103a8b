package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// ownPrefixes name the spans of the work item's own operations.
var ownPrefixes = []string{"catalog.", "ledger.", "task.", "dlq."}

// ownSpans returns the sorted names of item's children that are its own
// operations, each checked to have an AWS SDK CLIENT span as a child.
func ownSpans(t *testing.T, spans []*tracepb.Span, item *tracepb.Span) []string {
	t.Helper()
	var own []string
	for _, sp := range spans {
		if !bytes.Equal(sp.ParentSpanId, item.SpanId) || !slices.ContainsFunc(ownPrefixes, func(p string) bool { return strings.HasPrefix(sp.Name, p) }) {
			continue
		}
		own = append(own, sp.Name)
		sdk := slices.ContainsFunc(spans, func(c *tracepb.Span) bool {
			return bytes.Equal(c.ParentSpanId, sp.SpanId) && c.Kind == tracepb.Span_SPAN_KIND_CLIENT && strings.Contains(c.Name, ".")
		})
		if !sdk {
			t.Errorf("span %s has no AWS SDK span under it", sp.Name)
		}
	}
	slices.Sort(own)
	return own
}

// TestTraceReports: with MCPFN_TRACES=otlp, the task report and the
// dead-letter send are children of the work item's span (task.report,
// dlq.send), each over its AWS SDK call, with the reported status and
// wire error type; no span holds the task token or the record's body.
func TestTraceReports(t *testing.T) {
	const token, canary = "trace-task-token-canary", "trace-body-canary"
	rcv := startReceiver(t)
	srv := mcptest.NewServer(t, mcptest.Options{})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, srv.URL)}, env: []string{
		"MCPFN_TRACES=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
	}})

	// item returns the one work item span of fn among spans and its own
	// children's names.
	item := func(t *testing.T, spans []*tracepb.Span, fn, outcome string) []string {
		t.Helper()
		var items []*tracepb.Span
		for _, sp := range spans {
			if sp.Name == fn {
				items = append(items, sp)
			}
			b, _ := json.Marshal(sp)
			for _, c := range []string{token, canary, s.dlq["call"]} {
				if bytes.Contains(b, []byte(c)) {
					t.Errorf("exported span %s holds %q", sp.Name, c)
				}
			}
		}
		if len(items) != 1 || spanAttr(items[0], "mcpfn.outcome") != outcome {
			t.Fatalf("%d %s spans (trace %v), want one with outcome %s", len(items), fn, items, outcome)
		}
		return ownSpans(t, spans, items[0])
	}
	byName := func(spans []*tracepb.Span, name string) *tracepb.Span {
		for _, sp := range spans {
			if sp.Name == name {
				return sp
			}
		}
		return nil
	}

	res := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": srv.URL, "tool_name": "echo",
		"arguments": map[string]any{"text": "hi"}, "tool_use_id": "toolu_trace_task", "task_token": token}))
	if res.ErrorType != "" {
		t.Fatalf("call answered %s %s", res.ErrorType, res.ErrorMessage)
	}
	spans := rcv.take()
	if own := item(t, spans, "call", "task_succeeded"); !slices.Equal(own, []string{"ledger.begin", "ledger.complete", "task.report"}) {
		t.Errorf("own spans %v, want the ledger's and task.report", own)
	}
	if sp := byName(spans, "task.report"); sp == nil || spanAttr(sp, "mcpfn.task.status") != "success" {
		t.Errorf("task.report %v, want status success", sp)
	}

	res = invoke(t, s.call, sqsEvent(t, map[string]any{"server_url": srv.URL, "tool_name": "echo", "unknown": canary}))
	if got := batchFailures(t, res); len(got) != 0 {
		t.Fatalf("batch item failures %v, want the record dead-lettered", got)
	}
	spans = rcv.take()
	if own := item(t, spans, "call", "dead_lettered"); !slices.Equal(own, []string{"dlq.send"}) {
		t.Errorf("own spans %v, want dlq.send", own)
	}
	if sp := byName(spans, "dlq.send"); sp == nil || spanAttr(sp, "mcpfn.reported_error_type") != "invalid_request_error" {
		t.Errorf("dlq.send %v, want the reported type invalid_request_error", sp)
	}
	if sp := byName(spans, "SQS.SendMessage"); sp == nil || hex.EncodeToString(sp.ParentSpanId) != hex.EncodeToString(byName(spans, "dlq.send").GetSpanId()) {
		t.Errorf("SQS.SendMessage %v, want dlq.send's child", sp)
	}
}
