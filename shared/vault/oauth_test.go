package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// secretsAPI is what a Resolver with OAuth needs: moto's client or the fake.
type secretsAPI interface {
	vault.SecretsAPI
	vault.SecretsWriter
}

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// policyFor allows exactly the listed servers' address and port.
func policyFor(t *testing.T, entries ...string) *guard.Policy {
	t.Helper()
	p, err := guard.NewPolicy(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resolver(api secretsAPI, prefix string, p *guard.Policy, logs *logBuffer) *vault.Resolver {
	o := vault.OAuth{Secrets: api, HTTPClient: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p}
	if logs != nil {
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return vault.NewResolver(api, prefix, vault.WithOAuth(o))
}

// motoVault creates a vault holding creds in the test binary's moto and
// returns the client and the prefix.
func motoVault(t *testing.T, id string, creds ...vault.Credential) (*secretsmanager.Client, string) {
	t.Helper()
	api := secretsmanager.NewFromConfig(awstest.SharedMoto(t).Config(t.Context()))
	prefix := awstest.UniqueName("v") + "/"
	vaulttest.CreateSecret(t, api, prefix+id, creds...)
	return api, prefix
}

func fakeVault(id string, creds ...vault.Credential) (*vaulttest.Secrets, string) {
	s := &vaulttest.Secrets{}
	s.PutCredentials("p/"+id, creds...)
	return s, "p/"
}

const mcpServer = "https://mcp.example.com/mcp"

// oauthCred is an mcp_oauth credential refreshed at as with
// client_secret_basic.
func oauthCred(as *oauthtest.Server, server, access, refresh string, expires time.Time) vault.Credential {
	return vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: server, Token: access, ExpiresAt: expires,
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID, RefreshToken: refresh, Resource: server,
			Auth: vault.EndpointAuth{Type: oauth.AuthClientSecretBasic, ClientSecret: as.Options.ClientSecret}}}
}

// stored reads the credential for server back from the vault.
func stored(t *testing.T, api vault.SecretsAPI, name, server string) vault.Credential {
	t.Helper()
	out, err := api.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(name), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		t.Fatal(err)
	}
	norm, _ := vault.NormalizeURL(server)
	for _, c := range creds {
		if c.ServerURL == norm {
			return c
		}
	}
	t.Fatalf("no credential for %s in %s", server, name)
	return vault.Credential{}
}

func TestOAuthExpiredTokenRefreshedAndRotationStored(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	rt := as.IssueRefreshToken()
	api, prefix := motoVault(t, "team", oauthCred(as, mcpServer, "at-old", rt, time.Now().Add(30*time.Second)))
	r := resolver(api, prefix, policyFor(t, as.AllowEntry()), nil)

	m, err := r.Lookup(t.Context(), []string{"team"}, mcpServer)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != vault.TypeMCPOAuth || m.Token == "at-old" || !as.Valid(m.Token) {
		t.Fatalf("Lookup = %v; want a new token the server accepts", m)
	}
	reqs := as.TokenRequests()
	if len(reqs) != 1 || reqs[0].GrantType != "refresh_token" || reqs[0].AuthMethod != oauth.AuthClientSecretBasic || reqs[0].Resource != mcpServer {
		t.Fatalf("token requests %+v; want one refresh with client_secret_basic and the resource", reqs)
	}
	c := stored(t, api, prefix+"team", mcpServer)
	if c.Token != m.Token || c.Refresh.RefreshToken == rt || c.Lease != nil {
		t.Errorf("stored %+v (refresh %v, lease %v); want the new access token, the rotated refresh token, no lease", c, c.Refresh.RefreshToken == rt, c.Lease)
	}
	if d := time.Until(c.ExpiresAt); d < 50*time.Minute || d > 61*time.Minute {
		t.Errorf("stored expires_at in %s, want about an hour (expires_in 3600)", d)
	}
	for _, s := range []string{m.Token, c.Refresh.RefreshToken, rt, as.Options.ClientSecret} {
		if !slices.Contains(m.Secrets, s) {
			t.Errorf("Match.Secrets lacks a secret it read or obtained")
		}
	}
	// The stored token is fresh now: the next Lookup sends nothing.
	if m2, err := r.Lookup(t.Context(), []string{"team"}, mcpServer); err != nil || m2.Token != m.Token {
		t.Errorf("second Lookup = %v, %v; want the stored token", m2, err)
	}
	if n := len(as.TokenRequests()); n != 1 {
		t.Errorf("%d token requests after the second Lookup, want 1", n)
	}
}

func TestOAuthFreshTokenUsedWithoutRequest(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	at := as.IssueAccessToken()
	for _, tt := range []struct {
		name    string
		expires time.Time
	}{
		{"expires in two minutes", time.Now().Add(2 * time.Minute)}, // outside the 60 s margin
		{"no expires_at", time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api, prefix := fakeVault("team", oauthCred(as, mcpServer, at, as.IssueRefreshToken(), tt.expires))
			m, err := resolver(api, prefix, policyFor(t, as.AllowEntry()), nil).Lookup(t.Context(), []string{"team"}, mcpServer)
			if err != nil || m.Token != at {
				t.Fatalf("Lookup = %v, %v; want the stored token", m, err)
			}
			if as.Hits() != 0 || api.Writes() != 0 {
				t.Errorf("%d requests to the authorization server, %d vault writes; want none", as.Hits(), api.Writes())
			}
		})
	}
}

// TestOAuthConcurrentRefreshSpendsOnce: two Resolvers (two instances) and
// many goroutines refresh one credential at once; the refresh token is
// sent once, everyone gets the winner's token, and the vault's other
// credential is intact.
func TestOAuthConcurrentRefreshSpendsOnce(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{TokenDelay: 300 * time.Millisecond}) // the others must wait for the lease
	rt := as.IssueRefreshToken()
	other := vault.Credential{ServerURL: "https://other.example.com/mcp", Token: "tok-other"}
	api, prefix := motoVault(t, "team", other, oauthCred(as, mcpServer, "at-old", rt, time.Now().Add(-time.Minute)))
	p := policyFor(t, as.AllowEntry())
	rs := []*vault.Resolver{resolver(api, prefix, p, nil), resolver(api, prefix, p, nil)}

	const n = 12
	tokens := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			m, err := rs[i%2].Lookup(ctx, []string{"team"}, mcpServer)
			tokens[i], errs[i] = m.Token, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("lookup %d: %v", i, err)
		}
	}
	if spent := as.SpentRefreshTokens(); len(spent) != 1 || spent[0] != rt {
		t.Errorf("%d refresh tokens spent, want exactly the stored one", len(spent))
	}
	if n := len(as.TokenRequests()); n != 1 || as.Reuses() != 0 {
		t.Errorf("%d token requests, %d reuses; want 1 and 0", n, as.Reuses())
	}
	c := stored(t, api, prefix+"team", mcpServer)
	for i, tok := range tokens {
		if tok != c.Token {
			t.Errorf("lookup %d got another token than the one stored", i)
		}
	}
	if !as.Valid(c.Token) || c.Lease != nil {
		t.Errorf("stored token valid %t, lease %v; want valid, none", as.Valid(c.Token), c.Lease)
	}
	if o := stored(t, api, prefix+"team", other.ServerURL); o.Token != "tok-other" {
		t.Errorf("the other credential changed")
	}
}

func TestOAuthRefusedGrant(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	revoked := as.IssueRefreshToken()
	as.Revoke(revoked)
	wrongSecret := oauthCred(as, mcpServer, "at-old", as.IssueRefreshToken(), time.Now().Add(-time.Minute))
	wrongSecret.Refresh.Auth.ClientSecret = "not-the-secret"
	noRefresh := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at-old", ExpiresAt: time.Now().Add(-time.Minute)}
	for _, tt := range []struct {
		name     string
		cred     vault.Credential
		code     string
		requests int
	}{
		{"invalid_grant", oauthCred(as, mcpServer, "at-old", revoked, time.Now().Add(-time.Minute)), "invalid_grant", 1},
		{"invalid_client", wrongSecret, "invalid_client", 1},
		{"expired without a refresh block", noRefresh, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(as.TokenRequests())
			api, prefix := fakeVault("team", tt.cred)
			_, err := resolver(api, prefix, policyFor(t, as.AllowEntry()), nil).Lookup(t.Context(), []string{"team"}, mcpServer)
			var oe *oauth.Error
			if !errors.Is(err, oauth.ErrRefused) || !errors.As(err, &oe) || oe.Code != tt.code {
				t.Fatalf("Lookup: %v; want ErrRefused with code %q", err, tt.code)
			}
			if !strings.Contains(err.Error(), "vault team") || !strings.Contains(err.Error(), "https://mcp.example.com") || strings.Contains(err.Error(), "example.com/mcp") {
				t.Errorf("error %q; want the vault and the server's origin, no path", err)
			}
			if got := len(as.TokenRequests()) - before; got != tt.requests {
				t.Errorf("%d token requests, want %d", got, tt.requests)
			}
			if c := stored(t, api, prefix+"team", mcpServer); c.Lease != nil {
				t.Errorf("lease left behind after a refusal")
			}
		})
	}
}

// TestOAuthForcedRefresh: a 401 to a token believed valid forces one
// refresh; a second Refresh for the refused token after that uses the
// token already stored.
func TestOAuthForcedRefresh(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{})
	refused := "at-revoked-" + res.URL[len(res.URL)-5:]
	api, prefix := fakeVault("team", oauthCred(as, res.URL, refused, as.IssueRefreshToken(), time.Now().Add(time.Hour)))
	r := resolver(api, prefix, policyFor(t, as.AllowEntry(), res.AllowEntry()), nil)

	m, err := r.Lookup(t.Context(), []string{"team"}, res.URL)
	if err != nil || m.Token != refused {
		t.Fatalf("Lookup = %v, %v; want the stored token", m, err)
	}
	if code := get(t, res.URL, m.Token); code != http.StatusUnauthorized {
		t.Fatalf("resource answered %d to the stale token, want 401", code)
	}
	m2, err := r.Refresh(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, res.URL, m2.Token); code != http.StatusOK {
		t.Errorf("resource answered %d to the refreshed token, want 200", code)
	}
	if n := len(as.TokenRequests()); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	// Another work item refused with the same old token: no second refresh.
	m3, err := r.Refresh(t.Context(), m)
	if err != nil || m3.Token != m2.Token {
		t.Errorf("second Refresh = %v, %v; want the stored token", m3, err)
	}
	if n := len(as.TokenRequests()); n != 1 {
		t.Errorf("%d token requests after the second Refresh, want 1", n)
	}
	if _, err := r.Refresh(t.Context(), vault.Match{Found: true, VaultID: "x", Type: vault.TypeStaticBearer}); !errors.Is(err, vault.ErrNotRefreshable) {
		t.Errorf("Refresh of a static match: %v, want ErrNotRefreshable", err)
	}
}

func TestOAuthDisabled(t *testing.T) {
	api, prefix := fakeVault("team", vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at"})
	if _, err := vault.NewResolver(api, prefix).Lookup(t.Context(), []string{"team"}, mcpServer); !errors.Is(err, vault.ErrOAuthDisabled) {
		t.Errorf("Lookup without WithOAuth: %v, want ErrOAuthDisabled", err)
	}
}

// TestOAuthCanary: unique tokens, refresh tokens and client secrets (and
// the Basic form) appear in no error, log line or printed Match, though
// the authorization server quotes them in its refusals.
func TestOAuthCanary(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{ClientSecret: "cs-canary-5e1d"})
	res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{})
	p := policyFor(t, as.AllowEntry(), res.AllowEntry())
	logs := &logBuffer{}
	good := as.IssueRefreshToken()
	revoked := as.IssueRefreshToken()
	as.Revoke(revoked)
	api := &vaulttest.Secrets{}
	api.PutCredentials("p/ok", oauthCred(as, mcpServer, "at-canary-old", good, time.Now().Add(-time.Minute)))
	api.PutCredentials("p/revoked", oauthCred(as, mcpServer, "at-canary-old2", revoked, time.Now().Add(-time.Minute)))
	api.PutCredentials("p/cc", vault.Credential{Type: vault.TypeClientCredentials, ServerURL: res.URL,
		Client: &vault.Client{ClientID: as.Options.ClientID, ClientSecret: as.Options.ClientSecret}})
	badClient := vault.Credential{Type: vault.TypeClientCredentials, ServerURL: res.URL,
		Client: &vault.Client{ClientID: as.Options.ClientID, ClientSecret: "cs-canary-wrong-77", TokenEndpoint: as.TokenURL}}
	api.PutCredentials("p/badcc", badClient)
	r := resolver(api, "p/", p, logs)

	var outputs []string
	var secrets []string
	for _, tt := range []struct{ vault, server string }{{"ok", mcpServer}, {"revoked", mcpServer}, {"cc", res.URL}, {"badcc", res.URL}} {
		m, err := r.Lookup(t.Context(), []string{tt.vault}, tt.server)
		if err != nil {
			outputs = append(outputs, err.Error(), fmt.Sprintf("%+v", err))
		} else {
			secrets = append(secrets, m.Secrets...)
			outputs = append(outputs, fmt.Sprintf("%v %+v %#v %s", m, m, m, m.String()))
			slog.New(slog.NewJSONHandler(logs, nil)).Info("match", "m", m)
			if _, err := r.Refresh(t.Context(), m); err != nil {
				outputs = append(outputs, err.Error())
			}
		}
	}
	outputs = append(outputs, logs.String())
	secrets = append(secrets, good, revoked, as.Options.ClientSecret, "cs-canary-wrong-77", "at-canary-old", "at-canary-old2",
		oauth.BasicCredentials(as.Options.ClientID, as.Options.ClientSecret), oauth.BasicCredentials(as.Options.ClientID, "cs-canary-wrong-77"))
	for _, tr := range as.TokenRequests() {
		if tr.RefreshToken != "" {
			secrets = append(secrets, tr.RefreshToken)
		}
	}
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets collected; the flows did not run", len(secrets))
	}
	for _, out := range outputs {
		for _, s := range secrets {
			if s != "" && strings.Contains(out, s) {
				t.Errorf("a secret appears in %q", out)
			}
		}
	}
	if !strings.Contains(logs.String(), `"msg":"oauth token refreshed"`) {
		t.Errorf("no refresh log line: %s", logs.String())
	}
}
