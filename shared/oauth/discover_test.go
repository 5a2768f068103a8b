package oauth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpfn/mcpfn/shared/oauth"
)

// hostileDocs is what a hostile MCP server and its metadata name, each
// URL with a canary in its path; empty fields take the working default.
type hostileDocs struct {
	pointer  string   // the challenge's resource_metadata
	resource string   // the protected-resource metadata's resource
	servers  []string // its authorization_servers
	issuer   string   // the authorization-server metadata's issuer
	tokenURL string   // its token_endpoint
}

// TestDiscoverNamesOriginsOnly: whatever URL a hostile challenge or
// metadata document supplies, a refusal names its origin at most, in
// printable text.
func TestDiscoverNamesOriginsOnly(t *testing.T) {
	const canary = "sk-CANARY-0a6e"
	var docs hostileDocs
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	serverURL := srv.URL + "/mcp/" + canary
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	mux.HandleFunc("POST /mcp/"+canary, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+or(docs.pointer, srv.URL+"/prm")+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /prm", func(w http.ResponseWriter, _ *http.Request) {
		servers := docs.servers
		if servers == nil {
			servers = []string{srv.URL}
		}
		writeDoc(w, map[string]any{"resource": or(docs.resource, serverURL), "authorization_servers": servers})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeDoc(w, map[string]any{"issuer": or(docs.issuer, srv.URL), "token_endpoint": or(docs.tokenURL, srv.URL+"/token")})
	})

	for _, tc := range []struct {
		name string
		docs hostileDocs
	}{
		{"pointer without a host", hostileDocs{pointer: "https:///" + canary + "/prm"}},
		{"pointer to a denied address", hostileDocs{pointer: "http://10.0.0.1/" + canary + "/prm?k=" + canary}},
		{"pointer with userinfo", hostileDocs{pointer: "https://" + canary + "@10.0.0.1/prm"}},
		{"pointer host with a format character", hostileDocs{pointer: "https://prm.invalid\u202e/" + canary}},
		{"resource of another server", hostileDocs{resource: "https://evil.example/" + canary}},
		{"authorization server without a host", hostileDocs{servers: []string{"https:///" + canary}}},
		{"authorization server with a path", hostileDocs{servers: []string{srv.URL + "/" + canary}}},
		{"authorization server, opaque", hostileDocs{servers: []string{"https:" + canary}}},
		{"issuer of another server", hostileDocs{issuer: "https://evil.example/" + canary}},
		{"token endpoint without a host", hostileDocs{tokenURL: "https:///" + canary + "/token"}},
		{"token endpoint, another scheme", hostileDocs{tokenURL: "ftp://as.example/" + canary}},
		{"token endpoint at a denied address", hostileDocs{tokenURL: "http://169.254.169.254/" + canary}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs = tc.docs
			_, err := client(t, entry(srv)).Discover(t.Context(), serverURL)
			if err == nil {
				t.Fatal("Discover accepted the hostile documents")
			}
			msg := err.Error()
			if strings.Contains(msg, canary) {
				t.Errorf("error shows a path: %q", msg)
			}
			if i := strings.IndexFunc(msg, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
				t.Errorf("error has an unprintable rune at %d: %q", i, msg)
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) {
				t.Errorf("error %T, want *oauth.Error", err)
			}
		})
	}
}

func writeDoc(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
