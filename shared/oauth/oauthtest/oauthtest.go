// Package oauthtest gives tests a small OAuth 2.1 authorization server (see
// localstack.AuthServer) and an MCP-style protected resource on loopback,
// for tests of package oauth, package vault and the functions. A Resource
// answers 401 with a WWW-Authenticate challenge naming its RFC 9728
// metadata unless the request carries a token the Server issued.
package oauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// Options, Server and TokenRequest are localstack's authorization server.
type (
	Options      = localstack.AuthOptions
	Server       = localstack.AuthServer
	TokenRequest = localstack.TokenRequest
)

// NewServer starts a Server on loopback, closed in tb.Cleanup.
func NewServer(tb testing.TB, o Options) *Server {
	tb.Helper()
	s, err := localstack.StartAuthServer(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// ResourceOptions configure a Resource. The zero value is usable.
type ResourceOptions struct {
	// MetadataURL is the challenge's resource_metadata; default the
	// Resource's own /.well-known/oauth-protected-resource/mcp.
	MetadataURL string
	// AuthorizationServers is the metadata's authorization_servers;
	// default the Server's issuer.
	AuthorizationServers []string
	Scope                string       // the challenge's scope, if any
	Handler              http.Handler // reached with a valid token; default answers 200 {}
}

// Resource is an MCP-style protected resource at URL (base + "/mcp").
type Resource struct {
	*httptest.Server
	URL         string // the protected resource, base + "/mcp"
	MetadataURL string // its RFC 9728 metadata

	mu         sync.Mutex
	challenges int
	served     int
}

// NewResource starts a Resource guarded by as, closed in tb.Cleanup.
func NewResource(tb testing.TB, as *Server, o ResourceOptions) *Resource {
	tb.Helper()
	res := &Resource{}
	mux := http.NewServeMux()
	res.Server = httptest.NewServer(mux)
	tb.Cleanup(res.Close)
	res.URL = res.Server.URL + "/mcp"
	res.MetadataURL = res.Server.URL + "/.well-known/oauth-protected-resource/mcp"
	servers := o.AuthorizationServers
	if servers == nil {
		servers = []string{as.Issuer}
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"resource": res.URL, "authorization_servers": servers, "scopes_supported": []string{"mcp"}})
	})
	next := o.Handler
	if next == nil {
		next = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, map[string]any{}) })
	}
	pointer := o.MetadataURL
	if pointer == "" {
		pointer = res.MetadataURL
	}
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res.mu.Lock()
		res.served++
		res.mu.Unlock()
		next.ServeHTTP(w, r)
	})
	guarded := RequireBearer(as, pointer, o.Scope, counted)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !as.Valid(bearer(r)) {
			res.mu.Lock()
			res.challenges++
			res.mu.Unlock()
		}
		guarded.ServeHTTP(w, r)
	}))
	return res
}

// AllowEntry is the guard allow entry for this resource's address and port.
func (r *Resource) AllowEntry() string { return localstack.AllowEntry(r.Listener.Addr()) }

// Challenges is the number of requests answered 401.
func (r *Resource) Challenges() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.challenges
}

// Served is the number of requests that carried a valid token.
func (r *Resource) Served() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served
}

// RequireBearer answers 401 with `WWW-Authenticate: Bearer
// resource_metadata="<metadataURL>"` (and scope, when set) to a request
// without a token valid at as, and passes the others to next.
func RequireBearer(as *Server, metadataURL, scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if as.Valid(bearer(r)) {
			next.ServeHTTP(w, r)
			return
		}
		ch := fmt.Sprintf("Bearer resource_metadata=%q", metadataURL)
		if scope != "" {
			ch += fmt.Sprintf(", scope=%q", scope)
		}
		if bearer(r) != "" {
			ch += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", ch)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

func bearer(r *http.Request) string {
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return t
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
