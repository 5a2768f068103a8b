package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// TestNoSecretInLogs sends canary tokens and a server URL whose path and
// query carry canaries through every outcome, direct and batched, and
// proves none of them appears in the logs, metrics, results, wire errors,
// dead letters or task reports.
func TestNoSecretInLogs(t *testing.T) {
	const (
		goodToken  = "canary-good-token-7f3a9c"
		wrongToken = "canary-wrong-token-51d2e8"
		path       = "/mcp/sk-canary-path-3e9d"
		query      = "sig=canary-query-secret-0b44"
	)
	s := newStack(t, nil)
	// The fixture answers on every path, so the canary path reaches it.
	h, counters := mcptest.NewHandler(mcptest.Options{Stateless: true, BearerToken: goodToken})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	secured := srv.URL + path + "?" + query
	// A fixture that serves /mcp only: the canary path answers 404.
	elsewhere := mcptest.NewServer(t, mcptest.Options{})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"good", vault.Credential{ServerURL: secured, Token: goodToken})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"wrong", vault.Credential{ServerURL: secured, Token: wrongToken})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"near", vault.Credential{ServerURL: srv.URL + path + "/other", Token: wrongToken})

	bodies := []string{
		callBody(map[string]any{"server_url": secured, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}, "vault_ids": []string{"near", "good"}}),
		callBody(map[string]any{"server_url": secured, "tool_name": "echo", "vault_ids": []string{"wrong"}}),
		callBody(map[string]any{"server_url": secured, "tool_name": "nonexistent", "vault_ids": []string{"good"}}),
		callBody(map[string]any{"server_url": strings.TrimSuffix(runnertest.ClosedPortURL(t), "/mcp") + path + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": strings.TrimSuffix(runnertest.GarbageServer(t), "/mcp") + path + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": strings.TrimSuffix(elsewhere.URL, "/mcp") + path + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": "https://[::1]" + path + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": secured, "tool_name": "echo", "vault_ids": []string{"wrong"}, "task_token": "tok"}),
	}
	seen := s.Outputs(t, bodies, 2)
	all := strings.Join(seen, "\n")

	if counters.CallCount("echo") == 0 {
		t.Fatal("the good token never reached the server: the canary proves nothing")
	}
	if !strings.Contains(s.Logs.String(), "credential hint") {
		t.Error("no credential hint logged: the hint path is not covered")
	}
	for _, canary := range []string{goodToken, wrongToken, "canary-path", "canary-query"} {
		if strings.Contains(all, canary) {
			t.Errorf("%q leaked:\n%s", canary, all)
		}
	}
}
