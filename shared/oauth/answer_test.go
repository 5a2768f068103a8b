package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
)

// TestRefreshReadsEveryExpiresIn: a granted refresh is used whatever form
// its expires_in takes; the rotated refresh token always comes back.
func TestRefreshReadsEveryExpiresIn(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	c := client(t, as.AllowEntry())
	ep := oauth.Endpoint{TokenURL: as.TokenURL, ClientID: as.Options.ClientID, Auth: oauth.Auth{Method: oauth.AuthNone}}
	for _, tt := range []struct {
		raw  string
		want time.Duration
	}{
		{"3600", time.Hour},
		{"3599.5", 3599500 * time.Millisecond},
		{"3.6e3", time.Hour},
		{`"3600"`, time.Hour},
		{`"3600s"`, oauth.DefaultLifetime}, // unreadable
		{"absent", oauth.DefaultLifetime},
		{"0", oauth.DefaultLifetime},
		{"-5", oauth.DefaultLifetime},
		{"null", oauth.DefaultLifetime},
		{`{"s":1}`, oauth.DefaultLifetime},
		{"1e300", oauth.MaxLifetime},
		{"31536001", oauth.MaxLifetime}, // a year and a second
	} {
		t.Run(tt.raw, func(t *testing.T) {
			as.SetExpiresInJSON(tt.raw)
			rt := as.IssueRefreshToken()
			tok, err := c.Refresh(t.Context(), ep, rt)
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if tok.ExpiresIn != tt.want || tok.RefreshToken == "" || tok.RefreshToken == rt || !as.Valid(tok.AccessToken) {
				t.Errorf("Refresh = expires in %s, rotated %t, valid %t; want %s, true, true",
					tok.ExpiresIn, tok.RefreshToken != "" && tok.RefreshToken != rt, as.Valid(tok.AccessToken), tt.want)
			}
		})
	}
}

// TestLibraryRefusesOddExpiresIn pins the x/oauth2 behaviour Client.token
// works around: the library refuses a whole granted answer whose
// expires_in is fractional, in exponent form or not a number, and keeps a
// plain number in Extra as float64. Should an upgrade accept them, the
// recovery path in token may go.
func TestLibraryRefusesOddExpiresIn(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := clientcredentials.Config{ClientID: as.Options.ClientID, ClientSecret: as.Options.ClientSecret, TokenURL: as.TokenURL, AuthStyle: oauth2.AuthStyleInHeader}
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, &http.Client{Timeout: 10 * time.Second})
	for _, raw := range []string{"3599.5", "3.6e3", `"3600s"`} {
		as.SetExpiresInJSON(raw)
		if _, err := cfg.Token(ctx); err == nil {
			t.Errorf("expires_in %s: x/oauth2 accepted the answer; the recovery in oauth.Client.token is no longer needed", raw)
		}
	}
	as.SetExpiresInJSON("3600")
	tok, err := cfg.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := tok.Extra("expires_in").(float64); !ok || v != 3600 {
		t.Errorf("Extra(expires_in) = %#v, want float64 3600", tok.Extra("expires_in"))
	}
}

// TestUnusableAccessTokenKeepsTheRotatedRefreshToken: an answer whose
// access token cannot be sent still hands back the refresh token the
// server rotated to, with the error.
func TestUnusableAccessTokenKeepsTheRotatedRefreshToken(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"space in the access token", `{"access_token":"a b","refresh_token":"rt-next","expires_in":"3600s"}`},
		{"no access token", `{"refresh_token":"rt-next","expires_in":3599.5}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c := client(t, entry(srv))
			tok, err := c.Refresh(t.Context(), oauth.Endpoint{TokenURL: srv.URL, ClientID: "c", Auth: oauth.Auth{Method: oauth.AuthNone}}, "rt-old")
			if !errors.Is(err, oauth.ErrProtocol) || tok.RefreshToken != "rt-next" || tok.AccessToken != "" {
				t.Errorf("Refresh = %q rotated, %v; want rt-next and ErrProtocol", tok.RefreshToken, err)
			}
		})
	}
}
