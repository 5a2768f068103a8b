// Package onboard runs the MCP authorization-code flow once for a server,
// as cmd/mcpfn-auth does for an operator and cmd/mcpfn-conformance for the
// conformance suite, and records the grant a vault's mcp_oauth credential
// needs. The flow is go-sdk's auth.AuthorizationCodeHandler (PKCE S256,
// resource indicators, client ID metadata document, pre-registered client
// or dynamic registration, scopes from the challenge or the metadata,
// issuer checks); every request it makes goes through Options.Client.
// Rationale: DESIGN.md.
package onboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
)

// ErrNoGrant: the flow has not obtained a token.
var ErrNoGrant = errors.New("onboard: no grant obtained")

// Options configure a Flow. Client (a guarded client), RedirectURL and
// Fetch are required. ClientID (with ClientSecret, empty for a public
// client) names a pre-registered client; ClientMetadataURL a client ID
// metadata document; without either the client registers dynamically
// under ClientName ("mcpfn" when empty). Scopes, when set, are requested
// instead of those the server's challenge or metadata name.
type Options struct {
	Client            *http.Client
	RedirectURL       string
	Fetch             auth.AuthorizationCodeFetcher
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	ClientName        string
	Scopes            []string
}

// Flow is one authorization-code flow: hand Handler to mcp.Config.OAuth,
// connect, and read Grant.
type Flow struct {
	h   *auth.AuthorizationCodeHandler
	rec *guard.Recorder // the handler's client's: a guard refusal go-sdk reports as text

	mu       sync.Mutex
	resource string // the resource indicator of the last authorization request
	scope    string // and its scope
	cfg      *oauth2.Config
	token    *oauth2.Token
}

// New returns a Flow for o.
func New(o Options) (*Flow, error) {
	if o.Client == nil || o.RedirectURL == "" || o.Fetch == nil {
		return nil, errors.New("onboard: Client, RedirectURL and Fetch are required")
	}
	f := &Flow{}
	client, rec := guard.Record(o.Client)
	f.rec = rec
	name := o.ClientName
	if name == "" {
		name = "mcpfn"
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         o.RedirectURL,
		Client:              client,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			f.noteRequest(args.URL)
			return o.Fetch(ctx, args)
		},
		// The exchange's answer, as is: a source that refreshes would spend
		// the grant's refresh token whenever the token lives under
		// oauth2's 10 s margin, and Grant would hand out the spent one.
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			f.mu.Lock()
			f.cfg, f.token = c, t
			f.mu.Unlock()
			return oauth2.StaticTokenSource(t), nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   name,
				RedirectURIs: []string{o.RedirectURL},
				GrantTypes:   []string{"authorization_code", "refresh_token"},
			},
		},
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	if len(o.Scopes) > 0 {
		scopes := append([]string(nil), o.Scopes...)
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("onboard: %w", err)
	}
	f.h = h
	return f, nil
}

// Handler is the flow as an OAuthHandler for mcp.Config.OAuth. A failed
// Authorize wraps the guard refusal its requests met, if any, which go-sdk
// reports as text only; its message names every URL by its origin only
// (go-sdk quotes the URLs of the documents it read).
func (f *Flow) Handler() auth.OAuthHandler { return handler{f} }

type handler struct{ f *Flow }

func (h handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return h.f.h.TokenSource(ctx)
}

func (h handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.f.rec.Reset()
	err := h.f.h.Authorize(ctx, req, resp)
	if err == nil {
		return nil
	}
	var d *guard.DeniedError
	if denied := h.f.rec.Denied(); denied != nil && !errors.As(err, &d) {
		err = fmt.Errorf("%w (%w)", err, denied)
	}
	return &shownError{msg: text.OriginsOnly(err.Error()), err: err}
}

// shownError is err with a message that names URLs by their origin only.
type shownError struct {
	msg string
	err error
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }

// noteRequest keeps the resource indicator and scope of an authorization
// request, which the grant's refresh needs.
func (f *Flow) noteRequest(rawURL string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return
	}
	q := u.Query()
	f.mu.Lock()
	f.resource, f.scope = q.Get("resource"), q.Get("scope")
	f.mu.Unlock()
}

// Grant is what the flow obtained: the token and how to refresh it.
// AuthMethod is "none", "client_secret_basic" or "client_secret_post";
// ExpiresAt is zero when the server gave no lifetime. Printing, logging
// or marshaling a Grant redacts its tokens and secret.
type Grant struct {
	AccessToken   string
	RefreshToken  string
	ExpiresAt     time.Time
	TokenEndpoint string
	ClientID      string
	ClientSecret  string
	AuthMethod    string
	Scope         string
	Resource      string
}

// Grant returns the grant of the last successful authorization, exactly
// as its code exchange answered: the flow never refreshes, so the refresh
// token is unspent whatever the token's lifetime. The error wraps
// ErrNoGrant before one.
func (f *Flow) Grant() (Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cfg == nil || f.token == nil {
		return Grant{}, ErrNoGrant
	}
	g := Grant{
		AccessToken:   f.token.AccessToken,
		RefreshToken:  f.token.RefreshToken,
		ExpiresAt:     f.token.Expiry,
		TokenEndpoint: f.cfg.Endpoint.TokenURL,
		ClientID:      f.cfg.ClientID,
		ClientSecret:  f.cfg.ClientSecret,
		AuthMethod:    authMethod(f.cfg),
		Scope:         f.scope,
		Resource:      f.resource,
	}
	if s, ok := f.token.Extra("scope").(string); ok && s != "" {
		g.Scope = s
	}
	return g, nil
}

// authMethod names how c authenticates at the token endpoint.
func authMethod(c *oauth2.Config) string {
	switch {
	case c.ClientSecret == "":
		return "none"
	case c.Endpoint.AuthStyle == oauth2.AuthStyleInParams:
		return "client_secret_post"
	}
	return "client_secret_basic" // in the header, or auto-detected (header first)
}

func (g Grant) String() string {
	return fmt.Sprintf("{TokenEndpoint:%s ClientID:%s AuthMethod:%s Scope:%q Resource:%s ExpiresAt:%s AccessToken:%s RefreshToken:%s ClientSecret:%s}",
		text.Origin(g.TokenEndpoint), g.ClientID, g.AuthMethod, g.Scope, text.Origin(g.Resource), g.ExpiresAt.Format(time.RFC3339),
		redact(g.AccessToken), redact(g.RefreshToken), redact(g.ClientSecret))
}

// Format prints String for every verb, so no verb reaches a token.
func (g Grant) Format(f fmt.State, _ rune) { io.WriteString(f, g.String()) }

// LogValue redacts the tokens and the secret.
func (g Grant) LogValue() slog.Value { return slog.StringValue(g.String()) }

// MarshalJSON redacts the tokens and the secret.
func (g Grant) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", g.String())), nil }

func redact(s string) string {
	if s == "" {
		return ""
	}
	return text.Redacted
}

// Headless answers the authorization request without a browser, for
// servers that approve at once: it sends the request through client and
// reads the code, state and issuer from the redirect it answers with,
// which it does not follow.
func Headless(client *http.Client) auth.AuthorizationCodeFetcher {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("onboard: authorization request: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("onboard: authorization request to %s: %w", text.Origin(args.URL), err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			return nil, fmt.Errorf("onboard: the authorization server answered %d, not a redirect", resp.StatusCode)
		}
		return redirectResult(loc)
	}
}

// redirectResult reads an authorization response from the redirect URL.
func redirectResult(rawURL string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("onboard: unusable redirect: %w", err)
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("onboard: the authorization server refused: %s", text.Truncate(strings.TrimSpace(e+" "+q.Get("error_description")), 256))
	}
	if q.Get("code") == "" {
		return nil, errors.New("onboard: the redirect carries no code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
