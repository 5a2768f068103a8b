package main

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/work/worktest"
)

// TestNoSecretInLogs sends canary tokens and a canary URL query through
// every outcome, direct and batched, and proves none of them appears in the
// logs, metrics, results, wire errors, dead letters or task reports.
func TestNoSecretInLogs(t *testing.T) {
	const (
		goodToken  = "canary-good-token-7f3a9c"
		wrongToken = "canary-wrong-token-51d2e8"
		query      = "sig=canary-query-secret-0b44"
	)
	s := newStack(t, nil)
	secured := mcptest.NewServer(t, mcptest.Options{BearerToken: goodToken})
	worktest.PutVault(t, s.Secrets, s.Prefix+"good", worktest.VaultCredential{ServerURL: secured.URL + "?" + query, Token: goodToken})
	worktest.PutVault(t, s.Secrets, s.Prefix+"wrong", worktest.VaultCredential{ServerURL: secured.URL + "?" + query, Token: wrongToken})
	worktest.PutVault(t, s.Secrets, s.Prefix+"near", worktest.VaultCredential{ServerURL: secured.URL + "/other", Token: wrongToken})

	bodies := []string{
		callBody(map[string]any{"server_url": secured.URL + "?" + query, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}, "vault_ids": []string{"near", "good"}}),
		callBody(map[string]any{"server_url": secured.URL + "?" + query, "tool_name": "echo", "vault_ids": []string{"wrong"}}),
		callBody(map[string]any{"server_url": secured.URL + "?" + query, "tool_name": "nonexistent", "vault_ids": []string{"good"}}),
		callBody(map[string]any{"server_url": worktest.ClosedPortURL(t) + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": worktest.GarbageServer(t) + "?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": "https://[::1]/mcp?" + query, "tool_name": "echo"}),
		callBody(map[string]any{"server_url": secured.URL + "?" + query, "tool_name": "echo", "vault_ids": []string{"wrong"}, "task_token": "tok"}),
	}
	seen := s.Outputs(t, bodies, 2)
	all := strings.Join(seen, "\n")

	if secured.CallCount("echo") == 0 {
		t.Fatal("the good token never reached the server: the canary proves nothing")
	}
	if !strings.Contains(s.Logs.String(), "credential hint") {
		t.Error("no credential hint logged: the hint path is not covered")
	}
	for _, canary := range []string{goodToken, wrongToken, "canary-query-secret"} {
		if strings.Contains(all, canary) {
			t.Errorf("%q leaked:\n%s", canary, all)
		}
	}
}
