package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
)

// TestOnboardNamesOriginsOnly: when a hostile protected-resource metadata
// document makes the flow fail, the command names the URLs it supplied
// (and the server URL) by their origin only, and writes nothing.
func TestOnboardNamesOriginsOnly(t *testing.T) {
	const canary = "sk-CANARY-3b7e"
	as := oauthtest.NewServer(t, oauthtest.Options{})
	for _, tc := range []struct {
		name string
		prm  func(resource string) map[string]any
	}{
		{"authorization server without a host", func(resource string) map[string]any {
			return map[string]any{"resource": resource, "authorization_servers": []string{"https:///" + canary}}
		}},
		{"authorization server with a path", func(resource string) map[string]any {
			return map[string]any{"resource": resource, "authorization_servers": []string{as.Issuer + "/" + canary}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resourceURL string
			prm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(tc.prm(resourceURL))
			}))
			t.Cleanup(prm.Close)
			h, _ := mcptest.NewHandler(mcptest.Options{})
			res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Handler: h, MetadataURL: prm.URL + "/" + canary + "/prm"})
			resourceURL = res.URL
			old := guard.Default() // run sets it from the environment
			t.Cleanup(func() { guard.SetDefault(old) })

			path := filepath.Join(t.TempDir(), "vault.json")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			env := map[string]string{guard.EnvAllowList: strings.Join([]string{as.AllowEntry(), res.AllowEntry(), allowEntry(t, prm.URL)}, ",")}
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"-vault", "v1", "-file", path, res.URL}, func(k string) string { return env[k] }, &stdout, &stderr)
			if code != exitFail {
				t.Fatalf("exit status %d, want %d\n%s%s", code, exitFail, stdout.String(), stderr.String())
			}
			if s := stdout.String() + stderr.String(); strings.Contains(s, canary) {
				t.Errorf("the command shows a URL's path: %s", s)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("a vault was written")
			}
		})
	}
}

// allowEntry is the guard allow entry for a loopback test server's port.
func allowEntry(t *testing.T, rawURL string) string {
	t.Helper()
	_, port, ok := strings.Cut(strings.TrimPrefix(rawURL, "http://127.0.0.1"), ":")
	if !ok {
		t.Fatalf("%q is not a 127.0.0.1 URL with a port", rawURL)
	}
	return "127.0.0.1/32:" + port
}
