package vault_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// versions counts every version of secret name in moto, deprecated ones
// included: one per PutSecretValue that wrote.
func versions(t *testing.T, api *secretsmanager.Client, name string) int {
	t.Helper()
	out, err := api.ListSecretVersionIds(t.Context(), &secretsmanager.ListSecretVersionIdsInput{SecretId: aws.String(name), IncludeDeprecated: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Versions)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestDeadGrantRemembered: two instances and many work items on a revoked
// grant make one token request and two writes (the lease, then the dead
// grant); every item fails with the recorded error, and later lookups fail
// at once without a request or a write.
func TestDeadGrantRemembered(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{TokenDelay: 300 * time.Millisecond})
	rt := as.IssueRefreshToken()
	as.Revoke(rt)
	api, prefix := motoVault(t, "team", oauthCred(as, mcpServer, "at-old", rt, time.Now().Add(-time.Minute)))
	p := policyFor(t, as.AllowEntry())
	rs := []*vault.Resolver{resolver(api, prefix, p, nil), resolver(api, prefix, p, nil)}
	before := versions(t, api, prefix+"team")

	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, errs[i] = rs[i%2].Lookup(ctx, []string{"team"}, mcpServer)
		})
	}
	wg.Wait()
	check := func(what string, err error) {
		t.Helper()
		var oe *oauth.Error
		if !errors.Is(err, oauth.ErrRefused) || !errors.As(err, &oe) || oe.Code != "invalid_grant" {
			t.Errorf("%s: %v; want ErrRefused, invalid_grant", what, err)
			return
		}
		if msg := err.Error(); !strings.Contains(msg, "vault team") || !strings.Contains(msg, "https://mcp.example.com") || strings.Contains(msg, rt) {
			t.Errorf("%s: %q; want the vault, the origin and no token", what, msg)
		}
	}
	for i, err := range errs {
		check("lookup "+string(rune('a'+i)), err)
	}
	if got := len(as.TokenRequests()); got != 1 {
		t.Errorf("%d token requests, want 1", got)
	}
	if got := versions(t, api, prefix+"team") - before; got > 2 {
		t.Errorf("%d secret versions written, want at most 2", got)
	}
	c := stored(t, api, prefix+"team", mcpServer)
	if c.Lease != nil || c.Dead == nil || c.Dead.Error != "invalid_grant" || c.Dead.RefreshTokenSHA256 != sha(rt) || time.Since(c.Dead.At) > time.Minute {
		t.Fatalf("stored lease %v, dead grant %+v; want no lease and invalid_grant for the refresh token", c.Lease, c.Dead)
	}

	// Later work: at once, nothing sent, nothing written; a 401-forced
	// Refresh too.
	mid := versions(t, api, prefix+"team")
	_, err := rs[0].Lookup(t.Context(), []string{"team"}, mcpServer)
	check("later lookup", err)
	_, err = rs[1].Refresh(t.Context(), vault.Match{Found: true, VaultID: "team", Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at-old"})
	check("refresh after a 401", err)
	if got := len(as.TokenRequests()); got != 1 || versions(t, api, prefix+"team") != mid {
		t.Errorf("%d token requests, %d new versions after the grant was recorded dead; want 1, 0", got, versions(t, api, prefix+"team")-mid)
	}
}

// TestDeadGrantClearedByANewRefreshToken: an operator's edit with another
// refresh token (the dead_grant block left in place) is refreshed, and the
// block is dropped.
func TestDeadGrantClearedByANewRefreshToken(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	dead := as.IssueRefreshToken()
	as.Revoke(dead)
	c := oauthCred(as, mcpServer, "at-old", dead, time.Now().Add(-time.Minute))
	api, prefix := fakeVault("team", c)
	r := resolver(api, prefix, policyFor(t, as.AllowEntry()), nil)
	if _, err := r.Lookup(t.Context(), []string{"team"}, mcpServer); !errors.Is(err, oauth.ErrRefused) {
		t.Fatalf("Lookup: %v, want ErrRefused", err)
	}
	edited := stored(t, api, prefix+"team", mcpServer)
	if edited.Dead == nil {
		t.Fatal("no dead grant recorded")
	}
	edited.Refresh.RefreshToken = as.IssueRefreshToken()
	api.PutCredentials(prefix+"team", edited)
	m, err := r.Lookup(t.Context(), []string{"team"}, mcpServer)
	if err != nil || !as.Valid(m.Token) {
		t.Fatalf("Lookup after the edit: %v", err)
	}
	if got := stored(t, api, prefix+"team", mcpServer); got.Dead != nil || got.Token != m.Token {
		t.Errorf("stored dead grant %+v; want none, the new token stored", got.Dead)
	}
}

// TestOddExpiresInKeepsTheRotation: a granted refresh whose expires_in
// x/oauth2 cannot read is stored, rotated refresh token included.
func TestOddExpiresInKeepsTheRotation(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	for _, raw := range []string{"3599.5", `"3600s"`, "-5"} {
		t.Run(raw, func(t *testing.T) {
			as.SetExpiresInJSON(raw)
			rt := as.IssueRefreshToken()
			api, prefix := fakeVault("team", oauthCred(as, mcpServer, "at-old", rt, time.Now().Add(-time.Minute)))
			m, err := resolver(api, prefix, policyFor(t, as.AllowEntry()), nil).Lookup(t.Context(), []string{"team"}, mcpServer)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			c := stored(t, api, prefix+"team", mcpServer)
			if c.Token != m.Token || c.Refresh.RefreshToken == rt || c.ExpiresAt.Before(time.Now()) {
				t.Errorf("stored: token stored %t, rotated %t, expires %s; want the granted token, rotated, in the future",
					c.Token == m.Token, c.Refresh.RefreshToken != rt, c.ExpiresAt)
			}
		})
	}
}

// TestUnusableAnswerStoresTheRotation: an answer with a rotated refresh
// token but no usable access token stores the refresh token (the old one
// is spent) and fails the lookup.
func TestUnusableAnswerStoresTheRotation(t *testing.T) {
	srv, entry := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"has space","refresh_token":"rt-next","expires_in":3599.5}`))
	})
	c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at-old", ExpiresAt: time.Now().Add(-time.Minute),
		Refresh: &vault.Refresh{TokenEndpoint: srv.URL, ClientID: "c", RefreshToken: "rt-old", Auth: vault.EndpointAuth{Type: oauth.AuthNone}}}
	api, prefix := fakeVault("team", c)
	_, err := resolver(api, prefix, policyFor(t, entry), nil).Lookup(t.Context(), []string{"team"}, mcpServer)
	if !errors.Is(err, oauth.ErrProtocol) {
		t.Fatalf("Lookup: %v, want ErrProtocol", err)
	}
	if got := stored(t, api, prefix+"team", mcpServer); got.Refresh.RefreshToken != "rt-next" || got.Lease != nil || got.Token != "at-old" {
		t.Errorf("stored refresh token rotated %t, lease %v; want rt-next stored, no lease, the old access token", got.Refresh.RefreshToken == "rt-next", got.Lease)
	}
}

// stallingWriter passes writes to Secrets until stall is reached: that
// PutSecretValue (counting from 1) and every later one wait for their
// context; moves fail from failMove on.
type stallingWriter struct {
	*vaulttest.Secrets
	stall, failMove int

	mu          sync.Mutex
	puts, moves int
}

func (s *stallingWriter) PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, o ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	s.mu.Lock()
	s.puts++
	n := s.puts
	s.mu.Unlock()
	if s.stall > 0 && n >= s.stall {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Secrets.PutSecretValue(ctx, in, o...)
}

func (s *stallingWriter) UpdateSecretVersionStage(ctx context.Context, in *secretsmanager.UpdateSecretVersionStageInput, o ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error) {
	s.mu.Lock()
	s.moves++
	n := s.moves
	s.mu.Unlock()
	if s.failMove > 0 && n >= s.failMove {
		return nil, errors.New("stalled move")
	}
	return s.Secrets.UpdateSecretVersionStage(ctx, in, o...)
}

// TestWriteBackWithinTheDeadline: a Secrets Manager that stalls ends the
// lookup with the caller's context. A stalled lease write fails before
// anything is spent; a stalled write-back reports the spent token as an
// authentication failure and does not use the new token.
func TestWriteBackWithinTheDeadline(t *testing.T) {
	for _, tt := range []struct {
		name     string
		stall    int
		requests int
		want     error
	}{
		{"lease write stalls", 1, 0, context.DeadlineExceeded},
		{"write-back stalls", 2, 1, oauth.ErrRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewServer(t, oauthtest.Options{})
			secrets, prefix := fakeVault("team", oauthCred(as, mcpServer, "at-old", as.IssueRefreshToken(), time.Now().Add(-time.Minute)))
			w := &stallingWriter{Secrets: secrets, stall: tt.stall}
			p := policyFor(t, as.AllowEntry())
			r := vault.NewResolver(secrets, prefix, vault.WithOAuth(vault.OAuth{Secrets: w, HTTPClient: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p}))
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			start := time.Now()
			m, err := r.Lookup(ctx, []string{"team"}, mcpServer)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Lookup took %s, want it bounded by its context (2 s)", took)
			}
			if !errors.Is(err, tt.want) || m.Token != "" {
				t.Errorf("Lookup = token %t, %v; want no token, %v", m.Token != "", err, tt.want)
			}
			if got := len(as.TokenRequests()); got != tt.requests {
				t.Errorf("%d token requests, want %d", got, tt.requests)
			}
			if tt.want == oauth.ErrRefused && !strings.Contains(err.Error(), "could not be stored") {
				t.Errorf("error %q does not say the token could not be stored", err)
			}
		})
	}
}

// TestAbandonedWriteBackIsFinished: a write-back whose new version was put
// but not made current is finished by the next writer (the one successor
// its version may have), so the rotated refresh token is not lost and the
// spent one is not sent again.
func TestAbandonedWriteBackIsFinished(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	rt := as.IssueRefreshToken()
	secrets, prefix := fakeVault("team", oauthCred(as, mcpServer, "at-old", rt, time.Now().Add(-time.Minute)))
	p := policyFor(t, as.AllowEntry())
	// The first resolver's second move (the write-back's) fails.
	w := &stallingWriter{Secrets: secrets, failMove: 2}
	first := vault.NewResolver(secrets, prefix, vault.WithOAuth(vault.OAuth{Secrets: w, HTTPClient: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p}))
	if _, err := first.Lookup(t.Context(), []string{"team"}, mcpServer); !errors.Is(err, oauth.ErrRefused) {
		t.Fatalf("first Lookup: %v, want ErrRefused (granted, not stored)", err)
	}
	if c := stored(t, secrets, prefix+"team", mcpServer); c.Lease == nil || c.Refresh.RefreshToken != rt {
		t.Fatalf("after the abandoned write-back: lease %v; want the lease and the spent refresh token still current", c.Lease)
	}
	// Another instance, once the lease has expired, takes it over: its
	// lease write finds the abandoned version and makes it current.
	later := func() time.Time { return time.Now().Add(vault.LeaseTTL + time.Minute) }
	second := vault.NewResolver(secrets, prefix, vault.WithOAuth(vault.OAuth{Secrets: secrets, HTTPClient: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p, Now: later}))
	m, err := second.Lookup(t.Context(), []string{"team"}, mcpServer)
	if err != nil || !as.Valid(m.Token) {
		t.Fatalf("second Lookup: %v", err)
	}
	if got := len(as.TokenRequests()); got != 1 || as.Reuses() != 0 {
		t.Errorf("%d token requests, %d reuses; want 1, 0", got, as.Reuses())
	}
	if c := stored(t, secrets, prefix+"team", mcpServer); c.Refresh.RefreshToken == rt || c.Lease != nil {
		t.Errorf("stored: rotated %t, lease %v; want the rotated refresh token, no lease", c.Refresh.RefreshToken != rt, c.Lease)
	}
}

// TestDeadGrantFormat: the block round-trips and a malformed one is
// refused without quoting it.
func TestDeadGrantFormat(t *testing.T) {
	at := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at",
		Refresh: &vault.Refresh{TokenEndpoint: "https://as.example.com/token", ClientID: "c", RefreshToken: "rt", Auth: vault.EndpointAuth{Type: oauth.AuthNone}},
		Dead:    &vault.DeadGrant{Error: "invalid_grant", At: at, RefreshTokenSHA256: sha("rt")}}
	got, err := vault.Parse(vault.Encode(c))
	if err != nil || len(got) != 1 || got[0].Dead == nil || *got[0].Dead != *c.Dead {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	for _, bad := range []string{
		`{"error":"invalid_grant","at":"2026-12-04T18:00:00Z"}`,
		`{"error":"Invalid Grant!","at":"2026-12-04T18:00:00Z","refresh_token_sha256":"` + sha("rt") + `"}`,
		`{"error":"invalid_grant","at":"yesterday","refresh_token_sha256":"` + sha("rt") + `"}`,
		`{"error":"invalid_grant","at":"2026-12-04T18:00:00Z","refresh_token_sha256":"rt"}`,
		`{"error":"invalid_grant","at":"2026-12-04T18:00:00Z","refresh_token_sha256":"` + sha("rt") + `","token":"x"}`,
	} {
		doc := strings.Replace(string(vault.Encode(c)), `"dead_grant":{`, `"dead_grant":`+bad+`,"x":{`, 1)
		doc = strings.Replace(doc, `,"x":{"error":"invalid_grant","at":"2026-12-04T18:00:00Z","refresh_token_sha256":"`+sha("rt")+`"}`, "", 1)
		if _, err := vault.Parse([]byte(doc)); !errors.Is(err, vault.ErrVaultMalformed) {
			t.Errorf("dead_grant %s: %v, want ErrVaultMalformed", bad, err)
		}
	}
}
