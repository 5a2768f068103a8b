// Package onboardtest is a real OAuth 2.1 authorization server on loopback
// for tests of the authorization-code flow, with an MCP server that only
// answers its tokens: authorization-server and protected-resource
// metadata, dynamic client registration, an authorization endpoint that
// approves at once (PKCE S256 required), and a token endpoint issuing
// expiring access tokens and rotating refresh tokens.
package onboardtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// Server is the authorization server and the MCP server it protects.
type Server struct {
	// MCPURL is the protected MCP endpoint; Issuer the authorization
	// server's issuer (its origin).
	MCPURL, Issuer string
	// Counters are the MCP server's.
	*mcptest.Counters
	// ExpiresIn is the access tokens' lifetime; a test may change it
	// before tokens are issued.
	ExpiresIn time.Duration

	mu       sync.Mutex
	clients  map[string]client
	codes    map[string]grant
	access   map[string]bool
	refresh  map[string]grant // live refresh tokens
	spent    []string         // refresh tokens used, in order
	tokenReq int
}

type client struct {
	secret, method string
	redirects      []string
}

type grant struct {
	clientID, challenge, redirect, resource, scope string
}

// New starts both servers on 127.0.0.1; tb.Cleanup closes them.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{ExpiresIn: time.Hour, clients: map[string]client{}, codes: map[string]grant{},
		access: map[string]bool{}, refresh: map[string]grant{}}
	as := httptest.NewServer(s.asMux())
	tb.Cleanup(as.Close)
	s.Issuer = as.URL

	mcpHandler, counters := mcptest.NewHandler(mcptest.Options{})
	s.Counters = counters
	mux := http.NewServeMux()
	var rs *httptest.Server
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"resource": rs.URL + "/mcp", "authorization_servers": []string{s.Issuer}, "scopes_supported": []string{"tools"},
		})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !s.validAccess(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource/mcp", scope="tools"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	rs = httptest.NewServer(mux)
	tb.Cleanup(rs.Close)
	s.MCPURL = rs.URL + "/mcp"
	return s
}

func (s *Server) asMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": s.Issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
			"registration_endpoint": s.Issuer + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"tools", "offline_access"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		})
	})
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	return mux
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		Method       string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret := "client-"+random(), "secret-"+random()
	method := "client_secret_basic"
	if req.Method == "none" {
		method, secret = "none", ""
	}
	s.mu.Lock()
	s.clients[id] = client{secret: secret, method: method, redirects: req.RedirectURIs}
	s.mu.Unlock()
	resp := map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": method}
	if secret != "" {
		resp["client_secret"] = secret
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if !ok || !contains(c.redirects, redirect) || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := "code-" + random()
	s.mu.Lock()
	s.codes[code] = grant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: redirect,
		resource: q.Get("resource"), scope: q.Get("scope")}
	s.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenReq++
	id, ok := s.authenticate(r)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok = s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.clientID != id || g.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		s.spent = append(s.spent, rt)
		g, ok = s.refresh[rt]
		delete(s.refresh, rt) // rotation: each refresh token works once
		if !ok || g.clientID != id {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "access-"+random(), "refresh-"+random()
	s.access[at] = true
	s.refresh[rt] = g
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer",
		"expires_in": int(s.ExpiresIn / time.Second), "refresh_token": rt, "scope": g.scope})
}

// authenticate returns the client a token request authenticates as.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	c, ok := s.clients[id]
	if !ok {
		return "", false
	}
	switch c.method {
	case "none":
		return id, !basic && secret == ""
	default:
		return id, secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
	}
}

func (s *Server) validAccess(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access[tok]
}

// TokenRequests is how many token-endpoint requests arrived.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenReq
}

// Spent is the refresh tokens presented, in order.
func (s *Server) Spent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.spent...)
}

// Live reports whether refresh token rt can still be used.
func (s *Server) Live(rt string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.refresh[rt]
	return ok
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
