package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// TestOnboardWritesTheGrantedToken: against an authorization server whose
// tokens live seconds or less, the command writes the code exchange's
// answer, whose refresh token the server still accepts afterwards, and
// warns about the lifetime.
func TestOnboardWritesTheGrantedToken(t *testing.T) {
	for _, tc := range []struct {
		name, expiresIn string
		min, max        time.Duration // of expires_at - now, as written
	}{
		{"5 s", "5", -time.Minute, 6 * time.Second}, // under oauth2's 10 s refresh margin
		{"-60 s", "-60", -2 * time.Minute, -50 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := oauthtest.NewServer(t, oauthtest.Options{})
			as.SetExpiresInJSON(tc.expiresIn)
			h, _ := mcptest.NewHandler(mcptest.Options{})
			res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Handler: h, Scope: "tools"})
			p, err := guard.NewPolicy(as.AllowEntry(), res.AllowEntry())
			if err != nil {
				t.Fatal(err)
			}
			old := guard.Default()
			guard.SetDefault(p)
			t.Cleanup(func() { guard.SetDefault(old) })

			path := filepath.Join(t.TempDir(), "vault.json")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var out, warn bytes.Buffer
			if err := onboardServer(ctx, options{vaultID: "v1", serverURL: res.URL}, fileStore{path: path}, browser, &out, &warn); err != nil {
				t.Fatalf("onboard: %v\n%s%s", err, out.String(), warn.String())
			}
			written := time.Now()
			doc, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := vault.Parse(doc)
			if err != nil || len(creds) != 1 || creds[0].Refresh == nil {
				t.Fatalf("vault %v, %v: want one mcp_oauth credential with a refresh block", creds, err)
			}
			c := creds[0]
			if left := c.ExpiresAt.Sub(written); left < tc.min || left > tc.max {
				t.Errorf("expires_at is %s from now, want the granted lifetime (%s to %s)", left, tc.min, tc.max)
			}
			if n := as.Reuses(); n != 0 {
				t.Errorf("%d spent refresh tokens presented again", n)
			}
			if status := spend(t, as, c.Refresh.RefreshToken); status != http.StatusOK {
				t.Errorf("the stored refresh token is refused at the authorization server: HTTP %d", status)
			}
			if w := warn.String(); !strings.Contains(w, "warning") || !strings.Contains(w, "under 1m0s") {
				t.Errorf("stderr %q, want a warning about the short lifetime", w)
			}
			if s := out.String() + warn.String(); strings.Contains(s, c.Token) || strings.Contains(s, c.Refresh.RefreshToken) {
				t.Errorf("output shows a token:\n%s", s)
			}
		})
	}
}

// spend exchanges refresh token rt at as as its registered client and
// returns the HTTP status.
func spend(t *testing.T, as *oauthtest.Server, rt string) int {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, as.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(as.Options.ClientID, as.Options.ClientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err == nil && resp.StatusCode == http.StatusOK && answer.AccessToken == "" {
		t.Error("the refresh answered no access token")
	}
	return resp.StatusCode
}
