package vault_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// TestOAuthRefreshesCounted: each refresh this process spends is counted
// once, as a refresh or a failure; a fresh token counts nothing.
func TestOAuthRefreshesCounted(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	revoked := as.IssueRefreshToken()
	as.Revoke(revoked)
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	for _, tt := range []struct {
		name string
		cred vault.Credential
		want []string
	}{
		{"refreshed", oauthCred(as, mcpServer, "at-old", as.IssueRefreshToken(), past), []string{vault.MetricOAuthRefreshes}},
		{"grant refused", oauthCred(as, mcpServer, "at-old", revoked, past), []string{vault.MetricOAuthRefreshFailures}},
		{"fresh", oauthCred(as, mcpServer, "at-fresh", as.IssueRefreshToken(), future), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			api, prefix := fakeVault("team", tt.cred)
			p := policyFor(t, as.AllowEntry())
			r := vault.NewResolver(api, prefix, vault.WithOAuth(vault.OAuth{Secrets: api, HTTPClient: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p,
				Count: func(m string) { mu.Lock(); defer mu.Unlock(); got = append(got, m) }}))
			_, _ = r.Lookup(t.Context(), []string{"team"}, mcpServer)
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counted (-want +got):\n%s", diff)
			}
		})
	}
}
