package oauth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
)

func client(t *testing.T, entries ...string) *oauth.Client {
	t.Helper()
	p, err := guard.NewPolicy(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return &oauth.Client{HTTP: guard.NewClientWithPolicy(p, 10*time.Second), Policy: p}
}

func entry(s *httptest.Server) string {
	ap := s.Listener.Addr().(*net.TCPAddr).AddrPort()
	return fmt.Sprintf("%s/32:%d", ap.Addr(), ap.Port())
}

func TestDiscover(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{AuthMethods: []string{"client_secret_post"}})
	res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Scope: "mcp:read mcp:write"})
	got, err := client(t, as.AllowEntry(), res.AllowEntry()).Discover(t.Context(), res.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := oauth.Metadata{Resource: res.URL, Issuer: as.Issuer, TokenEndpoint: as.TokenURL, AuthMethods: []string{"client_secret_post"}, Scope: "mcp:read mcp:write"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover (-want +got):\n%s", diff)
	}
}

func TestDiscoverRefusals(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	// An authorization server whose metadata points its token endpoint at
	// the cloud metadata address.
	var evil *httptest.Server
	evil = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": evil.URL, "token_endpoint": "http://169.254.169.254/token"})
	}))
	t.Cleanup(evil.Close)
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	t.Cleanup(open.Close)

	for _, tt := range []struct {
		name   string
		server func(t *testing.T) (url string, entries []string)
		want   error
	}{
		{"no challenge", func(t *testing.T) (string, []string) { return open.URL, []string{entry(open)} }, oauth.ErrProtocol},
		{"token endpoint on the metadata address", func(t *testing.T) (string, []string) {
			res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{AuthorizationServers: []string{evil.URL}})
			return res.URL, []string{res.AllowEntry(), entry(evil)}
		}, oauth.ErrDenied},
		{"metadata pointer to another origin's resource", func(t *testing.T) (string, []string) {
			other := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{})
			res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{MetadataURL: other.MetadataURL})
			return res.URL, []string{res.AllowEntry(), other.AllowEntry(), as.AllowEntry()}
		}, oauth.ErrProtocol},
		{"server on a loopback port not allowed", func(t *testing.T) (string, []string) { return open.URL, []string{as.AllowEntry()} }, oauth.ErrDenied},
		{"plain http without any allow entry", func(t *testing.T) (string, []string) { return "http://mcp.example.com/mcp", nil }, oauth.ErrDenied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, entries := tt.server(t)
			_, err := client(t, entries...).Discover(t.Context(), u)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Discover: %v, want %v", err, tt.want)
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || strings.Contains(err.Error(), "/mcp") && !strings.HasPrefix(u, "http://mcp.") {
				t.Errorf("error %q: want an *Error naming origins only", err)
			}
		})
	}
	if n := len(as.TokenRequests()); n != 0 {
		t.Errorf("%d token requests, want 0", n)
	}
}

func TestErrorKinds(t *testing.T) {
	for k, want := range map[oauth.Kind]error{oauth.KindRefused: oauth.ErrRefused, oauth.KindUnavailable: oauth.ErrUnavailable,
		oauth.KindProtocol: oauth.ErrProtocol, oauth.KindDenied: oauth.ErrDenied} {
		err := fmt.Errorf("wrapped: %w", oauth.Errorf(k, "x"))
		if !errors.Is(err, want) {
			t.Errorf("Kind %s does not match its sentinel", k)
		}
		for _, other := range []error{oauth.ErrRefused, oauth.ErrUnavailable, oauth.ErrProtocol, oauth.ErrDenied} {
			if other != want && errors.Is(err, other) {
				t.Errorf("Kind %s matches %v", k, other)
			}
		}
	}
	if got := oauth.KindDenied.String(); got != "egress-denied" {
		t.Errorf("KindDenied prints %q", got)
	}
}

func TestParsePrivateKey(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	for name, p := range map[string]string{
		"rsa pkcs8":   pkcs8(rsaKey),
		"rsa pkcs1":   string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})),
		"ec pkcs8":    pkcs8(ecKey),
		"ec sec1":     string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})),
		"ed25519":     pkcs8(edKey),
		"not pem":     "-----BEGIN PRIVATE KEY-----",
		"certificate": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})),
	} {
		_, err := oauth.ParsePrivateKey(p)
		if wantErr := name == "not pem" || name == "certificate"; (err != nil) != wantErr {
			t.Errorf("ParsePrivateKey(%s): %v", name, err)
		}
	}
}

// TestServerRevokesAReusedRefreshToken pins the fixture's strictness the
// vault tests rely on: a refresh token is good once, and reusing it ends
// the grant.
func TestServerRevokesAReusedRefreshToken(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	c := client(t, as.AllowEntry())
	ep := oauth.Endpoint{TokenURL: as.TokenURL, ClientID: as.Options.ClientID, Auth: oauth.Auth{Method: oauth.AuthNone}}
	rt := as.IssueRefreshToken()
	tok, err := c.Refresh(t.Context(), ep, rt)
	if err != nil || tok.RefreshToken == rt || tok.ExpiresIn != time.Hour {
		t.Fatalf("Refresh = %v, %v; want a rotated token, expires_in 1 h", tok, err)
	}
	if _, err := c.Refresh(t.Context(), ep, rt); !errors.Is(err, oauth.ErrRefused) {
		t.Fatalf("reuse: %v, want ErrRefused", err)
	}
	if as.Reuses() != 1 || as.Valid(tok.AccessToken) {
		t.Errorf("Reuses %d, new token still valid %t; want 1, false", as.Reuses(), as.Valid(tok.AccessToken))
	}
	if _, err := c.Refresh(t.Context(), ep, tok.RefreshToken); !errors.Is(err, oauth.ErrRefused) {
		t.Errorf("refresh after the grant was revoked: %v, want ErrRefused", err)
	}
	if s := fmt.Sprintf("%v %+v %s", tok, tok, tok.String()); strings.Contains(s, tok.AccessToken) || strings.Contains(s, tok.RefreshToken) {
		t.Errorf("a printed Token shows a token: %s", s)
	}
}

// TestDiscoverFallsBackToTheWellKnownPaths: a 401 whose challenge names no
// resource_metadata sends discovery to the RFC 9728 well-known URIs, the
// path-based one first, then the root one.
func TestDiscoverFallsBackToTheWellKnownPaths(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	for _, at := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource", ""} {
		t.Run("metadata at "+at, func(t *testing.T) {
			var asked []string
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/mcp":
					w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
					w.WriteHeader(http.StatusUnauthorized)
				case at:
					asked = append(asked, r.URL.Path)
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.Issuer}})
				default:
					asked = append(asked, r.URL.Path)
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			got, err := client(t, as.AllowEntry(), entry(srv)).Discover(t.Context(), srv.URL+"/mcp")
			if at == "" {
				if !errors.Is(err, oauth.ErrProtocol) {
					t.Fatalf("Discover = %v, want ErrProtocol when no well-known path has it", err)
				}
				if diff := cmp.Diff([]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}, asked); diff != "" {
					t.Errorf("paths asked (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil || got.TokenEndpoint != as.TokenURL {
				t.Fatalf("Discover = %+v, %v; want the token endpoint %s", got, err, as.TokenURL)
			}
			if asked[len(asked)-1] != at {
				t.Errorf("paths asked %v, want the last to be %s", asked, at)
			}
		})
	}
}
