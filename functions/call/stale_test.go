package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

const serverURLTest = "https://mcp.example.com/mcp"

func callRequest(fields map[string]any) []byte {
	return runnertest.Request(map[string]any{
		"server_url": serverURLTest, "tool_name": "calculate", "catalog_id": "example",
		"arguments": map[string]any{"op": "add", "a": 1, "b": 2}, "vault_ids": []string{"team"},
	}, fields)
}

// newStaleEnv is newEnv with the vault callRequest names.
func newStaleEnv(t *testing.T) *env {
	e := newEnv(t)
	e.Secrets.PutCredentials("mcpfn/vaults/team", vault.Credential{ServerURL: serverURLTest, Token: "the-token"})
	return e
}

// errUnknownTool is how shared/mcp reports go-sdk's answer to a tool it does
// not have (the SDK's jsonrpc.Error, code -32602), wrapped.
var errUnknownTool = fmt.Errorf("mcp: call \"calculate\": %w: %w", mcp.ErrServerAnswered, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "calculate"`})

func TestStaleCatalogRequestsRediscovery(t *testing.T) {
	tests := []struct {
		name      string
		fields    map[string]any
		callErr   error
		protocol  string // the server's negotiated version; "" is the catalog's
		reason    string // rediscovery_reason; "" expects no request
		errorType string // the call's own answer: "" is a tool_result
		isError   bool
	}{
		{name: "tool not in the catalog", fields: map[string]any{"tool_name": "renamed"}, reason: "not_in_catalog", errorType: "invalid_request_error"},
		{name: "server answers unknown tool", callErr: errUnknownTool, reason: "unknown_tool", isError: true},
		{name: "server negotiates another protocol version", protocol: "2026-07-28", reason: "protocol_changed"},
		{name: "fresh catalog", reason: ""},
		{name: "another JSON-RPC error", callErr: fmt.Errorf("mcp: call: %w: %w", mcp.ErrServerAnswered, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}), isError: true},
		{name: "unknown tool without a catalog", fields: map[string]any{"catalog_id": nil}, callErr: errUnknownTool, isError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newStaleEnv(t)
			e.server.callErr = tt.callErr
			if tt.protocol != "" {
				e.server.stats.ProtocolVersion = tt.protocol
			}
			got := e.Invoke(t, callRequest(tt.fields))
			switch {
			case tt.errorType != "":
				if got.Error == nil || got.Error.Type != tt.errorType {
					t.Errorf("error %+v, want %s", got.Error, tt.errorType)
				}
			case got.Error != nil:
				t.Fatalf("error %+v, want a tool_result", got.Error)
			case !strings.Contains(string(got.Result), fmt.Sprintf(`"is_error":%v`, tt.isError)):
				t.Errorf("result %s, want is_error %v", got.Result, tt.isError)
			}
			sum := got.Summaries[0]
			if tt.reason == "" {
				if len(e.queue.sent) != 0 || sum["rediscovery"] != nil {
					t.Errorf("requested %v (summary %v), want none", e.queue.sent, sum)
				}
				return
			}
			want := []schedule.Request{{CatalogID: "example", VaultIDs: []string{"team"}}}
			if diff := cmp.Diff(want, e.queue.sent); diff != "" {
				t.Errorf("re-discoveries (-want +got):\n%s", diff)
			}
			if sum["rediscovery"] != "requested" || sum["rediscovery_reason"] != tt.reason {
				t.Errorf("summary %v, want rediscovery requested for %s", sum, tt.reason)
			}
			var counted bool
			for _, m := range e.Metrics.Records() {
				counted = counted || m[schedule.MetricStaleRequest] == 1.0
			}
			if !counted {
				t.Errorf("no %s metric in %v", schedule.MetricStaleRequest, e.Metrics.Records())
			}
		})
	}
}

func TestStaleBurstRequestsOnce(t *testing.T) {
	e := newStaleEnv(t)
	e.server.callErr = errUnknownTool
	var outcomes []any
	for i := range 20 {
		got := e.Invoke(t, callRequest(map[string]any{"tool_use_id": fmt.Sprintf("toolu_%02d", i)}))
		outcomes = append(outcomes, got.Summaries[len(got.Summaries)-1]["rediscovery"])
		e.Logs.Reset()
	}
	if len(e.queue.sent) != 1 || outcomes[0] != "requested" || outcomes[19] != "deduplicated" {
		t.Errorf("sent %v, outcomes %v; want one request, then deduplicated", e.queue.sent, outcomes)
	}
}

func TestRediscoverySkippedOrFailed(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(e *env)
		want  string // rediscovery on the summary line
		log   string // in the warning
	}{
		{"no discover queue", func(e *env) { e.handler.Rediscoveries = nil }, "skipped", "MCPFN_DISCOVER_QUEUE_URL"},
		{"no schedule (directory store)", func(e *env) { e.handler.Stale = nil }, "skipped", "MCPFN_CATALOG_TABLE"},
		{"the store fails", func(e *env) { e.stale.fail = errors.New("throttled") }, "failed", "throttled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newStaleEnv(t)
			tt.tweak(e)
			got := e.Invoke(t, callRequest(map[string]any{"tool_name": "renamed"}))
			if got.Error == nil || got.Error.Type != "invalid_request_error" {
				t.Errorf("error %+v, want the call's own invalid_request_error", got.Error)
			}
			if sum := got.Summaries[0]; sum["rediscovery"] != tt.want {
				t.Errorf("summary %v, want rediscovery %s", sum, tt.want)
			}
			var warned bool
			for _, r := range e.Logs.Records() {
				warned = warned || (r["level"] == "WARN" && strings.Contains(fmt.Sprint(r), tt.log))
			}
			if !warned || len(e.queue.sent) != 0 {
				t.Errorf("warned %v naming %s, sent %v; want a warning and nothing sent:\n%s", warned, tt.log, e.queue.sent, e.Logs)
			}
		})
	}
}
