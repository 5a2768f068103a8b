package onboard

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

func TestHeadlessReadsTheRedirect(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		location string
		want     *auth.AuthorizationResult
		wantErr  string
	}{
		{"approved", http.StatusFound, "http://localhost:3000/callback?code=c1&state=s1&iss=https%3A%2F%2Fas", &auth.AuthorizationResult{Code: "c1", State: "s1", Iss: "https://as"}, ""},
		{"refused", http.StatusFound, "http://localhost:3000/callback?error=access_denied&state=s1", nil, "refused: access_denied"},
		{"no code", http.StatusSeeOther, "http://localhost:3000/callback?state=s1", nil, "no code"},
		{"a page, not a redirect", http.StatusOK, "", nil, "answered 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			followed := false
			mux := http.NewServeMux()
			mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
				if tt.location != "" {
					w.Header().Set("Location", tt.location)
				}
				w.WriteHeader(tt.status)
			})
			mux.HandleFunc("/callback", func(http.ResponseWriter, *http.Request) { followed = true })
			ts := httptest.NewServer(mux)
			defer ts.Close()
			tt.location = strings.Replace(tt.location, "http://localhost:3000", ts.URL, 1)
			got, err := Headless(ts.Client())(t.Context(), &auth.AuthorizationArgs{URL: ts.URL + "/authorize?client_id=x"})
			if followed {
				t.Error("the redirect was followed")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || *got != *tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestAuthMethod(t *testing.T) {
	tests := []struct {
		secret string
		style  oauth2.AuthStyle
		want   string
	}{
		{"", oauth2.AuthStyleInParams, "none"},
		{"", oauth2.AuthStyleInHeader, "none"},
		{"s", oauth2.AuthStyleInParams, "client_secret_post"},
		{"s", oauth2.AuthStyleInHeader, "client_secret_basic"},
		{"s", oauth2.AuthStyleAutoDetect, "client_secret_basic"},
	}
	for _, tt := range tests {
		c := &oauth2.Config{ClientSecret: tt.secret, Endpoint: oauth2.Endpoint{AuthStyle: tt.style}}
		if got := authMethod(c); got != tt.want {
			t.Errorf("secret %q style %v: %s, want %s", tt.secret, tt.style, got, tt.want)
		}
	}
}

func TestGrantRedacts(t *testing.T) {
	g := Grant{AccessToken: "canary-access", RefreshToken: "canary-refresh", ClientSecret: "canary-secret",
		TokenEndpoint: "https://as.example/t/secret-path?q=secret-query", Resource: "https://mcp.example/mcp?k=secret-key", ClientID: "cid"}
	var b strings.Builder
	fmt.Fprintf(&b, "%v %+v %#v %s %q", g, g, g, g, g)
	j, _ := json.Marshal(g)
	b.Write(j)
	slog.New(slog.NewJSONHandler(&b, nil)).Info("grant", "g", g)
	for _, secret := range []string{"canary-access", "canary-refresh", "canary-secret", "secret-path", "secret-query", "secret-key"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("output carries %q: %s", secret, b.String())
		}
	}
	if !strings.Contains(b.String(), "https://as.example") || !strings.Contains(b.String(), "cid") {
		t.Errorf("output lost the token endpoint's origin or the client id: %s", b.String())
	}
}
