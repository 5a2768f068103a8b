package onboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// TestAuthorizeNamesOriginsOnly: go-sdk quotes the URLs a metadata
// document named; Authorize's error keeps their origins only.
func TestAuthorizeNamesOriginsOnly(t *testing.T) {
	const canary = "sk-CANARY-41c9"
	var servers []string
	prm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": "https://mcp.example.com/mcp", "authorization_servers": servers})
	}))
	defer prm.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(prm.URL, "http://"), ":")
	p, err := guard.NewPolicy("127.0.0.1/32:" + port)
	if err != nil {
		t.Fatal(err)
	}
	for _, as := range []string{
		"https:///" + canary,            // no host
		prm.URL + "/" + canary + "?x=y", // a path and a query (no metadata there)
	} {
		servers = []string{as}
		f, err := New(Options{Client: guard.NewClientWithPolicy(p, 0), RedirectURL: "http://127.0.0.1:1/callback",
			Fetch: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://mcp.example.com/mcp", nil)
		resp := &http.Response{StatusCode: http.StatusUnauthorized, Request: req, Body: http.NoBody,
			Header: http.Header{"Www-Authenticate": {`Bearer resource_metadata="` + prm.URL + `/prm"`}}}
		err = f.Handler().Authorize(t.Context(), req, resp)
		if err == nil {
			t.Fatalf("%s: Authorize succeeded", as)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("%s: error shows the path: %v", as, err)
		}
	}
}
