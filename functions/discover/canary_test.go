package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/work/worktest"
)

// TestNoSecretInLogs sends canary tokens and a canary URL query through
// every outcome, direct and batched, and proves none of them appears in the
// logs, metrics, results, wire errors, dead letters, task reports or the
// recorded failures.
func TestNoSecretInLogs(t *testing.T) {
	const (
		goodToken  = "canary-good-token-c0ffee"
		wrongToken = "canary-wrong-token-decaf0"
		query      = "sig=canary-query-secret-1a2b"
	)
	s := newStack(t)
	secured := mcptest.NewServer(t, mcptest.Options{BearerToken: goodToken})
	worktest.PutVault(t, s.secrets, s.prefix+"good", worktest.VaultCredential{ServerURL: secured.URL + "?" + query, Token: goodToken})
	worktest.PutVault(t, s.secrets, s.prefix+"wrong", worktest.VaultCredential{ServerURL: secured.URL + "?" + query, Token: wrongToken})
	worktest.PutVault(t, s.secrets, s.prefix+"near", worktest.VaultCredential{ServerURL: secured.URL + "/other", Token: wrongToken})

	bodies := []string{
		body(map[string]any{"catalog_id": "good", "server_url": secured.URL + "?" + query, "vault_ids": []string{"near", "good"}}),
		body(map[string]any{"catalog_id": "wrong", "server_url": secured.URL + "?" + query, "vault_ids": []string{"wrong"}}),
		body(map[string]any{"catalog_id": "closed", "server_url": worktest.ClosedPortURL(t) + "?" + query}),
		body(map[string]any{"catalog_id": "garbage", "server_url": worktest.GarbageServer(t) + "?" + query}),
		body(map[string]any{"catalog_id": "denied", "server_url": "https://[::1]/mcp?" + query}),
		body(map[string]any{"catalog_id": "wrong", "server_url": secured.URL + "?" + query, "vault_ids": []string{"wrong"}, "task_token": "tok"}),
	}
	var seen []string
	for _, b := range bodies {
		out, err := s.invoke(t, []byte(b))
		seen = append(seen, string(worktest.Payload(out)), fmt.Sprint(err))
	}
	out, err := s.invoke(t, worktest.Payload(worktest.SQSEvent(bodies...)))
	seen = append(seen, string(worktest.Payload(out)), fmt.Sprint(err))
	for _, m := range worktest.Drain(t, s.sqs, s.dlq, 2) {
		seen = append(seen, fmt.Sprint(m.Attributes))
	}
	for _, r := range s.tasks.Reports() {
		seen = append(seen, string(r.Output), r.Error, r.Cause)
	}
	for _, id := range []string{"good", "wrong", "closed", "garbage", "denied"} {
		c, err := s.store.Get(t.Context(), id)
		seen = append(seen, fmt.Sprintf("%+v %v", c, err))
		if c != nil && c.LastFailure != nil {
			seen = append(seen, c.LastFailure.Message)
		}
	}
	seen = append(seen, s.logs.String(), s.metrics.String())
	all := strings.Join(seen, "\n")

	if c, err := s.store.Get(t.Context(), "good"); err != nil || len(c.Tools) == 0 {
		t.Fatalf("the good token did not discover anything (%v): the canary proves nothing", err)
	}
	if !strings.Contains(s.logs.String(), "credential hint") {
		t.Error("no credential hint logged: the hint path is not covered")
	}
	for _, canary := range []string{goodToken, wrongToken, "canary-query-secret"} {
		if strings.Contains(all, canary) {
			t.Errorf("%q leaked:\n%s", canary, all)
		}
	}
}
