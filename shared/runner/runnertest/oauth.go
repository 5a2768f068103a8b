package runnertest

import (
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// OAuthVaultID is the vault the OAuth sample events name.
const OAuthVaultID = "example-oauth"

// OAuthSeed is the vault SeedOAuthVault wrote.
type OAuthSeed struct {
	secrets      *vaulttest.Secrets
	as           *oauthtest.Server
	refreshToken string
	requests     int // the authorization server's token requests before
}

// OAuthVaultState is what became of the OAuth vault, without a secret.
type OAuthVaultState struct {
	TokenRequests        int    `json:"token_requests"`
	RefreshTokenRotated  bool   `json:"refresh_token_rotated"`
	AccessTokenExpiresAt string `json:"access_token_expires_at"`
}

// SeedOAuthVault stores the vault OAuthVaultID in f's secrets with an
// mcp_oauth credential for the sample events' server: an access token
// that expired an hour ago and a live refresh token at as. It returns the
// vaults, with OAuth credentials whose requests may reach as only.
func SeedOAuthVault(t *testing.T, f *Fakes, as *oauthtest.Server) (*vault.Resolver, *OAuthSeed) {
	t.Helper()
	policy, err := guard.NewPolicy(as.AllowEntry())
	if err != nil {
		t.Fatal(err)
	}
	client := guard.NewClientWithPolicy(policy, 10*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	r := vault.NewResolver(f.Secrets, "mcpfn/vaults/",
		vault.WithOAuth(vault.OAuth{Secrets: f.Secrets, HTTPClient: client, Policy: policy, Logger: f.Logger}))
	s := &OAuthSeed{secrets: f.Secrets, as: as, refreshToken: as.IssueRefreshToken(), requests: len(as.TokenRequests())}
	f.Secrets.PutCredentials("mcpfn/vaults/"+OAuthVaultID, vault.Credential{
		Type: vault.TypeMCPOAuth, ServerURL: "https://mcp.example.com/mcp",
		Token: "at-expired-" + OAuthVaultID, ExpiresAt: time.Now().Add(-time.Hour),
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID, RefreshToken: s.refreshToken, Auth: vault.EndpointAuth{Type: "none"}},
	})
	return r, s
}

// State reports the vault after an invocation; nil when nothing wrote it
// and no token was requested.
func (s *OAuthSeed) State(t *testing.T) *OAuthVaultState {
	t.Helper()
	n := len(s.as.TokenRequests()) - s.requests
	if s.secrets.Writes() == 0 && n == 0 {
		return nil
	}
	creds, err := vault.Parse([]byte(s.secrets.Value("mcpfn/vaults/" + OAuthVaultID)))
	if err != nil || len(creds) != 1 || creds[0].Refresh == nil {
		t.Fatalf("vault %s after the invocation: %v (%d credentials)", OAuthVaultID, err, len(creds))
	}
	return &OAuthVaultState{
		TokenRequests:        n,
		RefreshTokenRotated:  creds[0].Refresh.RefreshToken != s.refreshToken,
		AccessTokenExpiresAt: creds[0].ExpiresAt.UTC().Format(time.RFC3339),
	}
}
