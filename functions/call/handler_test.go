package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

const serverURL = "https://mcp.example.com/mcp"

// request is a valid request with fields changed; a nil value removes one.
func request(fields map[string]any) []byte {
	return runnertest.Request(map[string]any{"server_url": serverURL, "tool_name": "calculate"}, fields)
}

func (e *env) direct(t *testing.T, payload []byte) runnertest.Invocation {
	t.Helper()
	e.Logs.Reset()
	e.Tasks.Reset()
	e.Queue.Reset()
	return e.Invoke(t, payload)
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    string // the wire error's message
	}{
		{"no server_url", request(map[string]any{"server_url": nil}), "server_url is required"},
		{"no tool_name", request(map[string]any{"tool_name": nil}), "tool_name is required"},
		{"long tool_name", request(map[string]any{"tool_name": strings.Repeat("t", 257)}), "tool_name is 257 bytes, at most 256"},
		{"arguments an array", request(map[string]any{"arguments": []int{1}}), "arguments must be a JSON object"},
		{"arguments a number", request(map[string]any{"arguments": 3}), "arguments must be a JSON object"},
		{"tool_use_id with a slash", request(map[string]any{"tool_use_id": "toolu/../x"}), "tool_use_id must be 1-256 characters of A-Z a-z 0-9 _ -"},
		{"idempotency_key with a space", request(map[string]any{"idempotency_key": "run 1"}), badKey},
		{"idempotency_key with a newline", request(map[string]any{"idempotency_key": "run\n1"}), badKey},
		{"idempotency_key with a control character", request(map[string]any{"idempotency_key": "run\u00001"}), badKey},
		{"idempotency_key with a bidi override", request(map[string]any{"idempotency_key": "run\u202e1"}), badKey},
		{"idempotency_key too long", request(map[string]any{"idempotency_key": strings.Repeat("k", 513)}), badKey}, // one over
		{"bad vault id", request(map[string]any{"vault_ids": []string{"a b"}}), `vault_ids: vault: bad vault id: "a b" has character ' ' at byte 1`},
		{"empty vault id", request(map[string]any{"vault_ids": []string{""}}), "vault_ids: vault: bad vault id: empty"},
		{"catalog_id too long", request(map[string]any{"catalog_id": strings.Repeat("c", 1025)}), "catalog_id: catalog: invalid catalog id: 1025 bytes, at most 1024"},
		{"userinfo in the URL", request(map[string]any{"server_url": "https://u:p@mcp.example.com/mcp"}), "server_url: guard: bad server URL: https://mcp.example.com: userinfo not allowed; put credentials in the vault"},
		{"unknown field", []byte(`{"server_url":"https://mcp.example.com/mcp","tool_name":"x","input":{}}`), `unknown field "input"`},
		{"catalog not discovered", request(map[string]any{"catalog_id": "elsewhere"}), `tool "calculate" cannot be checked: catalog "elsewhere" has not been discovered`},
		{"catalog with failures only", request(map[string]any{"catalog_id": "failed"}), `tool "calculate" cannot be checked: catalog "failed" has no stored tools (its discoveries failed)`},
		{"tool not in catalog", request(map[string]any{"catalog_id": "example", "tool_name": "drop_tables"}), `tool "drop_tables" is not in catalog "example" (version example-v1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.direct(t, tt.payload)
			if got.Error == nil || got.Error.Type != "invalid_request_error" || got.Error.Message != tt.want {
				t.Errorf("error = %+v, want invalid_request_error %q", got.Error, tt.want)
			}
			if len(e.server.Configs()) != 0 {
				t.Errorf("connected %d times, want 0: refused before any connection", len(e.server.Configs()))
			}
		})
	}
}

const badKey = "idempotency_key must be 1-512 characters, none of them white space or control characters"

// TestIdempotencyKeyAlphabet: every Step Functions execution ARN is a valid
// idempotency_key, up to 512 characters whatever their byte length.
func TestIdempotencyKeyAlphabet(t *testing.T) {
	for _, key := range []string{
		"arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:0b6f1c3e-6a0e-4f4c-9d0c-2f1e5d7a8b9c",
		"arn:aws:states:us-east-1:123456789012:express:mcpfn-call:run-1:5e9b0c1d-0000-4000-8000-000000000000",
		"arn:aws-us-gov:states:us-gov-west-1:123456789012:execution:calls/map-run-label:7f3a",   // a Map Run child
		"arn:aws:states:eu-west-1:123456789012:execution:mcpfn-call:réunion_2026.12(1)+x=y@z!'", // name characters Step Functions allows
		"arn:aws-cn:states:cn-north-1:123456789012:execution:mcpfn-call:调用-1",
		strings.Repeat("调", 512), // 1536 bytes: the ledger hashes it
		"k",
	} {
		if !validKey(key, maxIdempotencyKey) {
			t.Errorf("validKey(%q) = false, want true", key)
		}
	}
	e := newEnv(t)
	if got := e.direct(t, request(map[string]any{"idempotency_key": strings.Repeat("调", 512)})); got.Error != nil {
		t.Errorf("512 three-byte characters: error %+v", got.Error)
	}
}

// TestIdempotencyKeyPrecedence: tool_use_id, then idempotency_key, then the
// task token, then the SQS message id.
func TestIdempotencyKeyPrecedence(t *testing.T) {
	tests := []struct {
		name     string
		req      Request
		it       *runner.Item
		wantKey  string
		wantKind string
	}{
		{"everything", Request{ToolUseID: "toolu_1", IdempotencyKey: "exec-1"}, &runner.Item{TaskToken: "tok", Source: runner.SQS, ID: "msg-1"}, "toolu_1", "tool_use_id"},
		{"no tool_use_id", Request{IdempotencyKey: "exec-1"}, &runner.Item{TaskToken: "tok", Source: runner.SQS, ID: "msg-1"}, "exec-1", "idempotency_key"},
		{"a task token and a message id", Request{}, &runner.Item{TaskToken: "tok", Source: runner.SQS, ID: "msg-1"}, "tok", "task_token"},
		{"a message id", Request{}, &runner.Item{Source: runner.SQS, ID: "msg-1"}, "msg-1", "message_id"},
		{"idempotency_key on a direct call", Request{IdempotencyKey: "exec-1"}, &runner.Item{Source: runner.Direct, ID: "req-1"}, "exec-1", "idempotency_key"},
		{"a direct call without any", Request{}, &runner.Item{Source: runner.Direct, ID: "req-1"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, kind := idempotencyKey(tt.req, tt.it)
			if key != tt.wantKey || kind != tt.wantKind {
				t.Errorf("idempotencyKey = %q (%s), want %q (%s)", key, kind, tt.wantKey, tt.wantKind)
			}
		})
	}
}

func TestConnectionSettings(t *testing.T) {
	tests := []struct {
		name     string
		payload  []byte
		wantHint string
		wantArgs string
	}{
		{"protocol hint from the catalog", request(map[string]any{"catalog_id": "example", "arguments": map[string]int{"a": 1}}), "2025-11-25", `{"a":1}`},
		{"no catalog, no hint", request(map[string]any{"arguments": map[string]int{"a": 1}}), "", `{"a":1}`},
		{"absent arguments", request(nil), "", ""},
		{"null arguments", []byte(`{"server_url":"https://mcp.example.com/mcp","tool_name":"calculate","arguments":null}`), "", ""},
		{"arguments byte for byte", []byte(`{"server_url":"https://mcp.example.com/mcp","tool_name":"calculate","arguments":{ "b" : 1.50, "a":"<&>",` + "\n" + ` "n": 1e2 }}`), "", `{ "b" : 1.50, "a":"<&>",` + "\n" + ` "n": 1e2 }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if got := e.direct(t, tt.payload); got.Error != nil {
				t.Fatalf("error = %+v", got.Error)
			}
			if len(e.server.Configs()) != 1 {
				t.Fatalf("connected %d times, want 1", len(e.server.Configs()))
			}
			cfg := e.server.Configs()[0]
			if cfg.ProtocolVersion != tt.wantHint || cfg.HTTPClient != mcp.CallClient || cfg.URL != serverURL || cfg.BearerToken != "" {
				t.Errorf("config = %+v, want hint %q, mcp.CallClient, no token", cfg, tt.wantHint)
			}
			want := []string{"calculate " + tt.wantArgs}
			if diff := cmp.Diff(want, e.server.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	e := newEnv(t)
	e.Secrets.PutCredentials("mcpfn/vaults/team",
		vault.Credential{ServerURL: "https://mcp.example.com/other", Token: "wrong-path-token"},
		vault.Credential{ServerURL: "https://MCP.example.com:443/mcp", Token: "the-token"})
	e.Secrets.PutCredentials("mcpfn/vaults/near-miss", vault.Credential{ServerURL: "https://mcp.example.com/mcp/", Token: "slash-token"})

	got := e.direct(t, request(map[string]any{"vault_ids": []string{"near-miss", "team"}}))
	if got.Error != nil {
		t.Fatalf("error = %+v", got.Error)
	}
	if tok := e.server.Configs()[0].BearerToken; tok != "the-token" {
		t.Errorf("bearer token = %q, want the-token", tok)
	}
	logs := e.Logs.String()
	for _, secret := range []string{"the-token", "wrong-path-token", "slash-token"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	var hints []string
	for _, r := range e.Logs.Records() {
		if r["msg"] == "credential hint" {
			hints = append(hints, r["hint"].(string))
		}
	}
	if len(hints) == 0 {
		t.Errorf("no credential hint logged for the same-origin credentials:\n%s", logs)
	}
	if s := got.Summaries[0]; s["credential"] != "vault:team" {
		t.Errorf("summary credential = %v, want vault:team", s["credential"])
	}
}

func TestVaultFailures(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(e *env)
		wantType string
	}{
		{"vault does not exist", func(e *env) {}, "invalid_request_error"},
		{"vault malformed", func(e *env) { e.Secrets.Put("mcpfn/vaults/v", `{"credentials":"no"}`) }, "invalid_request_error"},
		{"Secrets Manager fails", func(e *env) { e.Secrets.Fail("mcpfn/vaults/v", errors.New("throttled")) }, "internal_error"},
		{"no credential matches: anonymous", func(e *env) {
			e.Secrets.PutCredentials("mcpfn/vaults/v", vault.Credential{ServerURL: "https://elsewhere.example.com/mcp", Token: "t"})
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			got := e.direct(t, request(map[string]any{"vault_ids": []string{"v"}, "tool_use_id": "toolu_vault"}))
			gotType := ""
			if got.Error != nil {
				gotType = got.Error.Type
			}
			if gotType != tt.wantType {
				t.Fatalf("error = %+v, want type %q", got.Error, tt.wantType)
			}
			if tt.wantType != "" {
				// Nothing ran: the key is free for a retry.
				if _, err := e.ledger.Peer().Begin(t.Context(), "toolu_vault"); err != nil {
					t.Errorf("ledger key still held after a failure before the call: %v", err)
				}
			}
		})
	}
}

func TestServerOutcomes(t *testing.T) {
	answered := fmt.Errorf("mcp: call %q: %w: unknown tool", "calculate", mcp.ErrServerAnswered)
	tests := []struct {
		name       string
		connectErr error
		callErr    error
		result     *mcp.CallResult
		wantType   string
		wantResult string
	}{
		{name: "tool error is a result", result: &mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text", Text: "division by zero"}}},
			wantResult: `{"type":"tool_result","tool_use_id":"toolu_x","is_error":true,"content":[{"type":"text","text":"division by zero"}]}`},
		{name: "server refusal is a result", callErr: answered,
			wantResult: `{"type":"tool_result","tool_use_id":"toolu_x","is_error":true,"content":[{"type":"text","text":"The MCP server refused this tool call: unknown tool\nDo not retry the same call unchanged."}]}`},
		{name: "unauthorized at connect", connectErr: fmt.Errorf("mcp: connect: %w: 401", mcp.ErrUnauthorized), wantType: "mcp_authentication_failed_error"},
		{name: "unauthorized during the call", callErr: fmt.Errorf("mcp: call: %w: 403", mcp.ErrUnauthorized), wantType: "mcp_authentication_failed_error"},
		{name: "denied at dial", connectErr: fmt.Errorf("mcp: connect: %w", &guard.DeniedError{Network: "tcp4", Addr: "10.0.0.1", Port: 443, Reason: guard.ReasonPrivate}), wantType: "mcp_egress_denied_error"},
		{name: "protocol at connect", connectErr: fmt.Errorf("mcp: connect: %w: garbage", mcp.ErrProtocol), wantType: "mcp_protocol_error"},
		{name: "budget during the call", callErr: fmt.Errorf("mcp: call: %w: %w", mcp.ErrProtocol, mcp.ErrBudgetExceeded), wantType: "mcp_protocol_error"},
		{name: "timeout during the call", callErr: fmt.Errorf("mcp: call: %w", context.DeadlineExceeded), wantType: "mcp_connection_failed_error"},
		{name: "redirect", connectErr: fmt.Errorf("mcp: connect: %w: 307", guard.ErrRedirect), wantType: "mcp_connection_failed_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.server.Err, e.server.callErr, e.server.result = tt.connectErr, tt.callErr, tt.result
			got := e.direct(t, request(map[string]any{"tool_use_id": "toolu_x"}))
			gotType := ""
			if got.Error != nil {
				gotType = got.Error.Type
			}
			if gotType != tt.wantType {
				t.Fatalf("error = %+v, want type %q", got.Error, tt.wantType)
			}
			if tt.wantResult != "" && string(got.Result) != tt.wantResult {
				t.Errorf("result =\n%s\nwant\n%s", got.Result, tt.wantResult)
			}
		})
	}
}

// TestCatalogHints: the catalog's read-only and idempotent hints reach the
// summary line, and an idempotent tool's replayed outcome says a new key
// may call it again; the tool still runs once per key.
func TestCatalogHints(t *testing.T) {
	yes, no := true, false
	e := newEnv(t)
	e.catalog.hints = map[string]*mcp.Annotations{"calculate": {ReadOnlyHint: &no, IdempotentHint: &yes}}
	e.server.callErr = fmt.Errorf("mcp: call: %w: connection reset", errors.New("read tcp"))
	payload := request(map[string]any{"catalog_id": "example", "idempotency_key": "k1"})
	first := e.direct(t, payload)
	again := e.direct(t, payload)
	if s := first.Summaries[0]; s["read_only_hint"] != false || s["idempotent_hint"] != true {
		t.Errorf("summary %v, want read_only_hint false and idempotent_hint true", s)
	}
	if len(e.server.calls) != 1 {
		t.Errorf("tool ran %d times, want 1", len(e.server.calls))
	}
	if again.Error == nil || !strings.Contains(again.Error.Message, "earlier delivery; the server marks this tool idempotent (idempotentHint), so calling it again under a new idempotency key is safe") {
		t.Errorf("replayed error %+v, want the idempotent note", again.Error)
	}
	e.catalog.hints = nil
	plain := e.direct(t, request(map[string]any{"catalog_id": "example", "idempotency_key": "k2"}))
	if _, ok := plain.Summaries[0]["idempotent_hint"]; ok {
		t.Errorf("summary %v: a hint the server did not give", plain.Summaries[0])
	}
}

func TestCatalogStoreFails(t *testing.T) {
	e := newEnv(t)
	e.catalog.fail = fmt.Errorf("%w: throttled", catalog.ErrUnavailable)
	got := e.direct(t, request(map[string]any{"catalog_id": "example"}))
	if got.Error == nil || got.Error.Type != "internal_error" || strings.Contains(got.Error.Message, "throttled") {
		t.Errorf("error = %+v, want internal_error without the cause", got.Error)
	}
}

// TestCallUsesItsBudget: the connection gets the item's operation deadline,
// the reserve stays for reporting.
func TestCallUsesItsBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var deadline time.Time
		e.handler.Connect = func(ctx context.Context, cfg mcp.Config) (Conn, error) {
			deadline, _ = ctx.Deadline()
			return e.server.Connect(ctx, cfg)
		}
		ctx, cancel := runnertest.Context(t.Context(), requestID, 30*time.Second)
		defer cancel()
		if _, err := e.Runner.Handle(ctx, request(nil)); err != nil {
			t.Fatal(err)
		}
		if got, want := time.Until(deadline), 25*time.Second; got != want {
			t.Errorf("operation budget %s, want %s (30 s to the deadline less the 5 s reserve)", got, want)
		}
	})
}

// FuzzRequest: no request body panics the call function, and every failure
// is one of the wire types.
func FuzzRequest(f *testing.F) {
	files, _ := filepath.Glob("../../events/call-*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"server_url":"https://mcp.example.com/mcp","tool_name":"t","arguments":null,"vault_ids":null}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e := newEnv(t)
		got := e.Invoke(t, payload)
		if got.Error != nil && !slices.Contains(wire.ErrorTypes, wire.ErrorType(got.Error.Type)) {
			t.Errorf("error %+v is not a wire error", got.Error)
		}
	})
}
