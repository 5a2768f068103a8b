package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// TestServerQuotesTheToken: a server that quotes the vault token, with no
// "Bearer" before it for a pattern to find, gets it neither into the
// tool_result nor into the ledger, nor into the wire error or the logs.
func TestServerQuotesTheToken(t *testing.T) {
	const token = "vt-7Qx9LmZp-20261201-q"
	b64 := base64.StdEncoding.EncodeToString([]byte(token))
	tests := []struct {
		name     string
		callErr  error
		result   *mcp.CallResult
		wantType string // "" for a result
	}{
		{name: "refusal quoting the token",
			callErr: fmt.Errorf("mcp: call %q: %w: calling \"tools/call\": the credential %s is not allowed to run this tool", "calculate", mcp.ErrServerAnswered, token)},
		{name: "refusal quoting it in base64",
			callErr: fmt.Errorf("mcp: call %q: %w: calling \"tools/call\": credential %s refused", "calculate", mcp.ErrServerAnswered, b64)},
		{name: "text content quoting the token",
			result: &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "you called me with " + token}}}},
		{name: "structured content quoting the token",
			result: &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "done"}}, Structured: json.RawMessage(`{"caller":"` + token + `"}`)}},
		{name: "tool error quoting the token",
			result: &mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text", Text: "bad credential " + token}}}},
		{name: "failure after the request quoting the token",
			callErr: fmt.Errorf("mcp: call: %w (sent %s)", context.DeadlineExceeded, token), wantType: "mcp_connection_failed_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.Secrets.PutCredentials("mcpfn/vaults/team", vault.Credential{ServerURL: serverURL, Token: token})
			e.server.callErr, e.server.result = tt.callErr, tt.result
			got := e.direct(t, request(map[string]any{"vault_ids": []string{"team"}, "tool_use_id": "toolu_leak"}))
			if e.server.Configs()[0].BearerToken != token {
				t.Fatalf("the server was not sent the token")
			}
			gotType := ""
			if got.Error != nil {
				gotType = got.Error.Type
			}
			if gotType != tt.wantType {
				t.Fatalf("error = %+v, want type %q", got.Error, tt.wantType)
			}
			entry, err := e.ledger.Peer().Begin(t.Context(), "toolu_leak")
			if err != nil || !entry.Done {
				t.Fatalf("ledger entry %+v, %v; want the outcome recorded", entry, err)
			}
			stored, _ := json.Marshal(entry.Outcome)
			wire, _ := json.Marshal(got.Error)
			for what, s := range map[string]string{
				"tool_result":    string(got.Result),
				"wire error":     string(wire),
				"ledger outcome": string(stored),
				"logs":           e.Logs.String(),
			} {
				for _, secret := range []string{token, b64} {
					if strings.Contains(s, secret) {
						t.Errorf("%s carries the token (%q): %s", what, secret, s)
					}
				}
			}
			if tt.wantType == "" && !strings.Contains(string(got.Result), "[redacted]") {
				t.Errorf("tool_result %s, want the quoted token replaced by [redacted]", got.Result)
			}
		})
	}
}

// TestRealServerQuotesTheToken: a go-sdk server that reads the
// Authorization header and quotes the token, bare and in base64, in a
// JSON-RPC error and in a tool's text, over the real ledger (moto).
func TestRealServerQuotesTheToken(t *testing.T) {
	const token = "vt-real-Zx81Qp-20261201"
	b64 := base64.StdEncoding.EncodeToString([]byte(token))
	server := sdk.NewServer(&sdk.Implementation{Name: "quoting", Version: "1.0.0"}, nil)
	bare := func(req *sdk.CallToolRequest) string {
		return strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
	}
	server.AddTool(&sdk.Tool{Name: "refuse", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			tok := bare(req)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "credential " + tok + " (" + base64.StdEncoding.EncodeToString([]byte(tok)) + ") may not call this tool"}
		})
	server.AddTool(&sdk.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			tok := bare(req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you are " + tok + ", also known as " + base64.StdEncoding.EncodeToString([]byte(tok))}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)

	s := newStack(t, nil)
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"v", vault.Credential{ServerURL: srv.URL, Token: token})
	for _, tool := range []string{"refuse", "whoami"} {
		t.Run(tool, func(t *testing.T) {
			id := "toolu_quote_" + tool
			out, err := s.Invoke(t, runnertest.Payload(map[string]any{"server_url": srv.URL, "tool_name": tool, "vault_ids": []string{"v"}, "tool_use_id": id}), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			result := string(runnertest.Payload(out))
			if !strings.Contains(result, "[redacted]") {
				t.Fatalf("result %s does not quote the server's text with the token redacted: did the token reach the server?", result)
			}
			entry, err := s.ledger.Begin(t.Context(), id)
			if err != nil || !entry.Done {
				t.Fatalf("ledger entry %+v, %v; want the outcome recorded", entry, err)
			}
			for what, v := range map[string]string{"tool_result": result, "ledger outcome": string(entry.Outcome.Result), "logs": s.Logs.String()} {
				for _, secret := range []string{token, b64} {
					if strings.Contains(v, secret) {
						t.Errorf("%s carries the token (%q): %s", what, secret, v)
					}
				}
			}
		})
	}
}
