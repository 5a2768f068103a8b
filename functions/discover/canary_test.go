package main

import (
	"fmt"
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
// dead letters, task reports or the recorded failures.
func TestNoSecretInLogs(t *testing.T) {
	const (
		goodToken  = "canary-good-token-c0ffee"
		wrongToken = "canary-wrong-token-decaf0"
		path       = "/mcp/sk-canary-path-5f1c"
		query      = "sig=canary-query-secret-1a2b"
	)
	s := newStack(t)
	// The fixture answers on every path, so the canary path reaches it.
	h, _ := mcptest.NewHandler(mcptest.Options{Stateless: true, BearerToken: goodToken})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	secured := srv.URL + path + "?" + query
	// A fixture that serves /mcp only: the canary path answers 404.
	elsewhere := mcptest.NewServer(t, mcptest.Options{})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"good", vault.Credential{ServerURL: secured, Token: goodToken})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"wrong", vault.Credential{ServerURL: secured, Token: wrongToken})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"near", vault.Credential{ServerURL: srv.URL + path + "/other", Token: wrongToken})

	bodies := []string{
		body(map[string]any{"catalog_id": "good", "server_url": secured, "vault_ids": []string{"near", "good"}}),
		body(map[string]any{"catalog_id": "wrong", "server_url": secured, "vault_ids": []string{"wrong"}}),
		body(map[string]any{"catalog_id": "closed", "server_url": strings.TrimSuffix(runnertest.ClosedPortURL(t), "/mcp") + path + "?" + query}),
		body(map[string]any{"catalog_id": "garbage", "server_url": strings.TrimSuffix(runnertest.GarbageServer(t), "/mcp") + path + "?" + query}),
		body(map[string]any{"catalog_id": "elsewhere", "server_url": strings.TrimSuffix(elsewhere.URL, "/mcp") + path + "?" + query}),
		body(map[string]any{"catalog_id": "denied", "server_url": "https://[::1]" + path + "?" + query}),
		body(map[string]any{"catalog_id": "wrong", "server_url": secured, "vault_ids": []string{"wrong"}, "task_token": "tok"}),
	}
	seen := s.Outputs(t, bodies, 2)
	for _, id := range []string{"good", "wrong", "closed", "garbage", "elsewhere", "denied"} {
		c, err := s.Store.Get(t.Context(), id) // the head keeps the origin; the URL only sealed
		seen = append(seen, fmt.Sprintf("%+v %v", c, err))
		if c != nil && c.LastFailure != nil {
			seen = append(seen, c.LastFailure.Message)
		}
	}
	all := strings.Join(seen, "\n")

	if c, err := s.Store.Get(t.Context(), "good"); err != nil || len(c.Tools) == 0 {
		t.Fatalf("the good token did not discover anything (%v): the canary proves nothing", err)
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
