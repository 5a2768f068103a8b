package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// hostile starts a loopback server with handler h and returns its URL and
// allow entry.
func hostile(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	ap := s.Listener.Addr().(*net.TCPAddr).AddrPort()
	return s, fmt.Sprintf("%s/32:%d", ap.Addr(), ap.Port())
}

func TestOAuthTokenEndpointUnavailable(t *testing.T) {
	slow, slowEntry := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go away
		<-r.Context().Done()
	})
	failing, failingEntry := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"temporarily_unavailable"}`, http.StatusServiceUnavailable)
	})
	down, downEntry := hostile(t, nil)
	down.Close()
	for _, tt := range []struct {
		name, url, entry string
	}{
		{"slow", slow.URL + "/token", slowEntry},
		{"503", failing.URL + "/token", failingEntry},
		{"down", down.URL + "/token", downEntry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at-old", ExpiresAt: time.Now().Add(-time.Minute),
				Refresh: &vault.Refresh{TokenEndpoint: tt.url, ClientID: "c", RefreshToken: "rt-1", Auth: vault.EndpointAuth{Type: oauth.AuthNone}}}
			api, prefix := fakeVault("team", c)
			const budget = 2 * time.Second
			ctx, cancel := context.WithTimeout(t.Context(), budget)
			defer cancel()
			start := time.Now()
			_, err := resolver(api, prefix, policyFor(t, tt.entry), nil).Lookup(ctx, []string{"team"}, mcpServer)
			if !errors.Is(err, oauth.ErrUnavailable) {
				t.Fatalf("Lookup: %v; want ErrUnavailable", err)
			}
			if d := time.Since(start); d > budget+20*time.Second { // generous: the bound is the budget, not the 30 s token budget
				t.Errorf("Lookup took %s with a %s budget", d, budget)
			}
			if c := stored(t, api, prefix+"team", mcpServer); c.Lease != nil || c.Refresh.RefreshToken != "rt-1" {
				t.Errorf("stored lease %v; want the lease released and the refresh token kept", c.Lease)
			}
		})
	}
}

// TestOAuthEgressDenied: token and metadata URLs the policy refuses are
// never asked. The fixtures' loopback is allowed by exact entries only.
func TestOAuthEgressDenied(t *testing.T) {
	var trapped atomic.Int32
	trap, _ := hostile(t, func(w http.ResponseWriter, r *http.Request) { trapped.Add(1) })
	as := oauthtest.NewServer(t, oauthtest.Options{})
	allowed := policyFor(t, as.AllowEntry())

	t.Run("token endpoint", func(t *testing.T) {
		for _, tt := range []struct {
			name, url string
			p         *guard.Policy
		}{
			{"loopback port not allowed", trap.URL + "/token", allowed},
			{"metadata address", "http://169.254.169.254/latest/token", allowed},
			{"private address", "https://10.1.2.3/token", allowed},
			{"plain http without an allow entry", as.TokenURL, policyFor(t)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				c := oauthCred(as, mcpServer, "at-old", as.IssueRefreshToken(), time.Now().Add(-time.Minute))
				c.Refresh.TokenEndpoint = tt.url
				api, prefix := fakeVault("team", c)
				_, err := resolver(api, prefix, tt.p, nil).Lookup(t.Context(), []string{"team"}, mcpServer)
				if !errors.Is(err, oauth.ErrDenied) {
					t.Fatalf("Lookup: %v; want ErrDenied", err)
				}
			})
		}
	})
	t.Run("metadata pointers", func(t *testing.T) {
		for _, tt := range []struct {
			name    string
			opts    oauthtest.ResourceOptions
			trapped bool // the pointer is the trap: it must get nothing
		}{
			{"resource_metadata on a loopback port not allowed", oauthtest.ResourceOptions{MetadataURL: trap.URL + "/prm"}, true},
			{"resource_metadata on the metadata address", oauthtest.ResourceOptions{MetadataURL: "http://169.254.169.254/latest/meta-data"}, false},
			{"authorization server on a loopback port not allowed", oauthtest.ResourceOptions{AuthorizationServers: []string{trap.URL}}, true},
			{"authorization server on the metadata address", oauthtest.ResourceOptions{AuthorizationServers: []string{"http://169.254.169.254"}}, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := oauthtest.NewResource(t, as, tt.opts)
				c := vault.Credential{Type: vault.TypeClientCredentials, ServerURL: res.URL,
					Client: &vault.Client{ClientID: as.Options.ClientID, ClientSecret: as.Options.ClientSecret}}
				api, prefix := fakeVault("team", c)
				before := trapped.Load()
				_, err := resolver(api, prefix, policyFor(t, as.AllowEntry(), res.AllowEntry()), nil).Lookup(t.Context(), []string{"team"}, res.URL)
				if !errors.Is(err, oauth.ErrDenied) {
					t.Fatalf("Lookup: %v; want ErrDenied", err)
				}
				if got := trapped.Load() - before; got != 0 {
					t.Errorf("the refused address got %d requests", got)
				}
				if n := len(as.TokenRequests()); n != 0 {
					t.Errorf("%d token requests, want 0", n)
				}
			})
		}
	})
	if n := trapped.Load(); n != 0 {
		t.Errorf("the trap got %d requests", n)
	}
}

// TestOAuthHugeTokenAnswer: a token endpoint answering 1 GiB costs bounded
// memory and is an error, not a crash.
func TestOAuthHugeTokenAnswer(t *testing.T) {
	huge, entry := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"`)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range 1 << 10 { // 1 GiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpServer, Token: "at-old", ExpiresAt: time.Now().Add(-time.Minute),
		Refresh: &vault.Refresh{TokenEndpoint: huge.URL + "/token", ClientID: "c", RefreshToken: "rt-1", Auth: vault.EndpointAuth{Type: oauth.AuthNone}}}
	api, prefix := fakeVault("team", c)
	r := resolver(api, prefix, policyFor(t, entry), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.Lookup(t.Context(), []string{"team"}, mcpServer)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, oauth.ErrProtocol) && !errors.Is(err, oauth.ErrUnavailable) {
		t.Fatalf("Lookup: %v; want ErrProtocol or ErrUnavailable", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 { // generous: a read of the whole answer allocates over 1 GiB
		t.Errorf("allocated %d MiB for the answer", grew>>20)
	}
}
