package credentials

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// fakeVaults finds one credential and counts its refreshes.
type fakeVaults struct {
	match      vault.Match
	lookupErr  error
	refreshes  []string // the tokens Refresh was asked to replace
	refreshErr error
}

func (f *fakeVaults) Lookup(context.Context, []string, string) (vault.Match, error) {
	return f.match, f.lookupErr
}

func (f *fakeVaults) Refresh(_ context.Context, m vault.Match) (vault.Match, error) {
	f.refreshes = append(f.refreshes, m.Token)
	if f.refreshErr != nil {
		return vault.Match{}, f.refreshErr
	}
	m.Token = fmt.Sprintf("refreshed-%d", len(f.refreshes))
	return m, nil
}

// fakeItem records what Credential tells the work item.
type fakeItem struct {
	secrets []string
	notes   []slog.Attr
}

func (it *fakeItem) OperationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}
func (it *fakeItem) AddSecret(s string)          { it.secrets = append(it.secrets, s) }
func (it *fakeItem) Scrub(s string) string       { return s }
func (it *fakeItem) Annotate(attrs ...slog.Attr) { it.notes = append(it.notes, attrs...) }
func (it *fakeItem) LogAttrs() []slog.Attr       { return nil }

func refusal() *http.Response {
	return &http.Response{StatusCode: http.StatusUnauthorized, Body: io.NopCloser(strings.NewReader(""))}
}

func token(t *testing.T, a Auth) string {
	t.Helper()
	ts, err := a.OAuth.TokenSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// TestRefreshOnce pins the one "refresh once" guard on the 401 path: a
// refused token is refreshed once per work item, and a refused refreshed
// token is not refreshed again.
func TestRefreshOnce(t *testing.T) {
	v := &fakeVaults{match: vault.Match{Found: true, VaultID: "v1", Type: vault.TypeMCPOAuth, ServerURL: "https://mcp.example.com/mcp", Token: "stored"}}
	it := &fakeItem{}
	ctx := context.Background()
	a, err := Credential(ctx, v, it, []string{"v1"}, "https://mcp.example.com/mcp", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if a.OAuth == nil || token(t, a) != "stored" {
		t.Fatalf("Credential = %+v, want an OAuth refresher with the stored token", a)
	}
	if cfg := a.Config(mcp.Config{}); cfg.OAuth == nil || cfg.BearerToken != "" {
		t.Errorf("Config = %+v, want OAuth set and no bearer token", cfg)
	}
	if err := a.OAuth.Authorize(ctx, nil, refusal()); err != nil {
		t.Fatalf("first Authorize: %v", err)
	}
	if got := token(t, a); got != "refreshed-1" {
		t.Errorf("token after the refresh = %q, want refreshed-1", got)
	}
	err = a.OAuth.Authorize(ctx, nil, refusal())
	if !errors.Is(err, errRefreshedOnce) {
		t.Errorf("second Authorize = %v, want errRefreshedOnce", err)
	}
	if want := []string{"stored"}; fmt.Sprint(v.refreshes) != fmt.Sprint(want) {
		t.Errorf("refreshes = %q, want %q (the refreshed token is not refreshed again)", v.refreshes, want)
	}
	if !strings.Contains(fmt.Sprint(it.secrets), "refreshed-1") {
		t.Errorf("secrets = %q, want the refreshed token registered", it.secrets)
	}
}

func TestCredentialKinds(t *testing.T) {
	tests := []struct {
		name      string
		v         fakeVaults
		vaultIDs  []string
		wantToken string
		wantOAuth bool
		wantType  wire.ErrorType
	}{
		{name: "no vaults", vaultIDs: nil},
		{name: "no match", v: fakeVaults{match: vault.Match{}}, vaultIDs: []string{"v1"}},
		{name: "static bearer", v: fakeVaults{match: vault.Match{Found: true, VaultID: "v1", Type: vault.TypeStaticBearer, Token: "tok"}}, vaultIDs: []string{"v1"}, wantToken: "tok"},
		{name: "client credentials", v: fakeVaults{match: vault.Match{Found: true, VaultID: "v1", Type: vault.TypeClientCredentials, Token: "cc"}}, vaultIDs: []string{"v1"}, wantToken: "cc", wantOAuth: true},
		{name: "missing vault", v: fakeVaults{lookupErr: fmt.Errorf("%w: v9", vault.ErrVaultNotFound)}, vaultIDs: []string{"v9"}, wantType: wire.InvalidRequest},
		{name: "refused grant", v: fakeVaults{lookupErr: oauth.Errorf(oauth.KindRefused, "no")}, vaultIDs: []string{"v1"}, wantType: wire.AuthenticationFailed},
		{name: "other failure", v: fakeVaults{lookupErr: errors.New("throttled")}, vaultIDs: []string{"v1"}, wantType: wire.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Credential(context.Background(), &tt.v, &fakeItem{}, tt.vaultIDs, "https://mcp.example.com/mcp", slog.New(slog.DiscardHandler))
			if got := wire.TypeOf(err); err != nil && got != tt.wantType || err == nil && tt.wantType != "" {
				t.Fatalf("Credential error = %v (%s), want type %q", err, got, tt.wantType)
			}
			if a.Token != tt.wantToken || (a.OAuth != nil) != tt.wantOAuth {
				t.Errorf("Credential = {Token:%q OAuth:%t}, want {Token:%q OAuth:%t}", a.Token, a.OAuth != nil, tt.wantToken, tt.wantOAuth)
			}
		})
	}
}
