// Package oauth obtains access tokens for MCP servers: the refresh-token and
// client-credentials grants (x/oauth2), and the MCP way to find a token
// endpoint (401 WWW-Authenticate → RFC 9728 protected-resource metadata →
// RFC 8414 / OIDC authorization-server metadata, go-sdk's oauthex and auth).
//
// Every URL is judged by the egress policy before anything is sent, and
// every request goes through a guarded client (no redirects, no proxy, a
// timeout; at most 1 MiB of an answer is read). Every
// failure is an *Error whose Kind says which wire error it is. Rationale:
// shared/vault/DESIGN.md.
package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
)

// Token endpoint authentication methods (RFC 7591 names).
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
)

// DefaultTimeout caps each request of a Client whose HTTP is nil.
const DefaultTimeout = 30 * time.Second

// AssertionLifetime is how long a private_key_jwt client assertion is valid.
const AssertionLifetime = 60 * time.Second

// Client makes OAuth requests. The zero value is ready: HTTP nil means
// guard.NewClientWithPolicy(Policy, DefaultTimeout); Policy nil means
// guard.Default(); Now nil means time.Now. A non-nil HTTP is used as is
// (give it a guarded transport). Safe for concurrent use.
type Client struct {
	HTTP   *http.Client
	Policy *guard.Policy
	Now    func() time.Time

	once sync.Once
	http *http.Client
}

func (c *Client) client() *http.Client {
	c.once.Do(func() {
		c.http = c.HTTP
		if c.http == nil {
			c.http = guard.NewClientWithPolicy(c.Policy, DefaultTimeout)
		}
	})
	return c.http
}

func (c *Client) policy() *guard.Policy {
	if c.Policy == nil {
		return guard.Default()
	}
	return c.Policy
}

func (c *Client) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// recording returns a client like c's whose transport records a guard
// refusal, which x/oauth2 may flatten into text, and traces each request
// (span.go).
func (c *Client) recording() (*http.Client, *guard.Recorder) {
	hc, rec := guard.Record(c.client())
	hc.Transport = traced{next: hc.Transport}
	return hc, rec
}

// checkURL judges raw, a URL of endpoint, before any request: a malformed
// URL is KindProtocol (it came from a document or the vault), one the
// policy refuses (a denied literal address, plain http without an allow
// entry) is KindDenied.
func (c *Client) checkURL(endpoint, raw string) error {
	if _, err := guard.CheckURL(raw, true); err != nil {
		return &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "not a usable http(s) URL"}
	}
	if _, err := c.policy().CheckURL(raw); err != nil {
		e := &Error{Kind: KindDenied, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "refused by the egress policy: " + strings.TrimPrefix(err.Error(), "guard: ")}
		var d *guard.DeniedError
		if errors.As(err, &d) {
			e.cause, e.Detail = d, d.Error()
		} else {
			e.Detail = "plain http needs an egress allow entry"
		}
		return e
	}
	return nil
}

// Auth is how a client authenticates at the token endpoint. Printing or
// logging an Auth redacts its secrets.
type Auth struct {
	Method       string        // AuthNone, AuthClientSecretBasic, AuthClientSecretPost or AuthPrivateKeyJWT
	ClientSecret string        // client_secret_basic and client_secret_post
	PrivateKey   crypto.Signer // private_key_jwt: *rsa.PrivateKey (RS256), *ecdsa.PrivateKey (ES256/384/512) or ed25519.PrivateKey (EdDSA)
	KeyID        string        // private_key_jwt: the JWT header's kid, if set
}

func (a Auth) String() string {
	return fmt.Sprintf("{Method:%s ClientSecret:%s PrivateKey:%s KeyID:%s}", a.Method, redact(a.ClientSecret), redactKey(a.PrivateKey), a.KeyID)
}

// Format prints String for every verb.
func (a Auth) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue redacts the secrets.
func (a Auth) LogValue() slog.Value {
	return slog.GroupValue(slog.String("method", a.Method), slog.String("client_secret", redact(a.ClientSecret)), slog.String("key_id", a.KeyID))
}

// BasicCredentials is the value of the Authorization header
// client_secret_basic sends, without "Basic ": base64 of the form-escaped
// client id and secret (RFC 6749 §2.3.1). Register it with a scrubber.
func BasicCredentials(clientID, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(secret)))
}

// Endpoint is a token endpoint and the client that asks it.
type Endpoint struct {
	TokenURL string
	Issuer   string // the authorization server's issuer, when discovered
	ClientID string
	Auth     Auth
	Scope    string // space-separated; "" sends none
	Resource string // RFC 8707 resource indicator; "" sends none
}

// Token is what a token endpoint granted. Printing or logging a Token
// redacts it.
type Token struct {
	AccessToken  string
	RefreshToken string        // "" when none was sent
	ExpiresIn    time.Duration // expires_in read by Lifetime: never 0
}

func (t Token) String() string {
	return fmt.Sprintf("{AccessToken:%s RefreshToken:%s ExpiresIn:%s}", redact(t.AccessToken), redact(t.RefreshToken), t.ExpiresIn)
}

// Format prints String for every verb.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, t.String()) }

// LogValue redacts the tokens.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("access_token", redact(t.AccessToken)), slog.String("refresh_token", redact(t.RefreshToken)), slog.Duration("expires_in", t.ExpiresIn))
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	return text.Redacted
}

func redactKey(k crypto.Signer) string {
	if k == nil {
		return ""
	}
	return text.Redacted
}

// Refresh spends refreshToken at ep (grant_type refresh_token, with
// ep.Scope and ep.Resource when set) in exactly one request. The returned
// RefreshToken is the rotated one, or "" when none was sent. An answer
// that grants a token is used whatever else in it is odd (expires_in: see
// Lifetime). An error may still come with a Token whose RefreshToken the
// server rotated to (the access token was unusable): store it, since
// refreshToken is spent.
func (c *Client) Refresh(ctx context.Context, ep Endpoint, refreshToken string) (Token, error) {
	if ep.Auth.Method == AuthPrivateKeyJWT {
		return Token{}, &Error{Kind: KindProtocol, Endpoint: "token endpoint", Origin: text.Origin(ep.TokenURL), Detail: "private_key_jwt is not supported for refresh"}
	}
	return c.token(ctx, ep, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// ClientCredentials asks ep for a token with the client-credentials grant,
// in exactly one request.
func (c *Client) ClientCredentials(ctx context.Context, ep Endpoint) (Token, error) {
	return c.token(ctx, ep, url.Values{})
}

// token makes one token request. clientcredentials.Config is used for both
// grants: it sends EndpointParams (grant_type may be overridden) and never
// probes a second auth style when one is set.
func (c *Client) token(ctx context.Context, ep Endpoint, params url.Values) (Token, error) {
	if err := c.checkURL("token endpoint", ep.TokenURL); err != nil {
		return Token{}, err
	}
	cfg := clientcredentials.Config{ClientID: ep.ClientID, TokenURL: ep.TokenURL, Scopes: strings.Fields(ep.Scope), EndpointParams: params}
	if ep.Resource != "" {
		params.Set("resource", ep.Resource)
	}
	switch ep.Auth.Method {
	case AuthNone:
		cfg.AuthStyle = oauth2.AuthStyleInParams
	case AuthClientSecretBasic:
		cfg.AuthStyle, cfg.ClientSecret = oauth2.AuthStyleInHeader, ep.Auth.ClientSecret
	case AuthClientSecretPost:
		cfg.AuthStyle, cfg.ClientSecret = oauth2.AuthStyleInParams, ep.Auth.ClientSecret
	case AuthPrivateKeyJWT:
		a, err := assertion(ep.Auth.PrivateKey, ep.Auth.KeyID, ep.ClientID, audience(ep), c.now())
		if err != nil {
			return Token{}, &Error{Kind: KindProtocol, Endpoint: "token endpoint", Origin: text.Origin(ep.TokenURL), Detail: "cannot sign the client assertion: " + err.Error()}
		}
		cfg.AuthStyle = oauth2.AuthStyleInParams
		params.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		params.Set("client_assertion", a)
	default:
		return Token{}, &Error{Kind: KindProtocol, Endpoint: "token endpoint", Origin: text.Origin(ep.TokenURL), Detail: fmt.Sprintf("unsupported token endpoint auth method %q", ep.Auth.Method)}
	}
	hc, rec := c.recording()
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	tee := &answerTee{base: base}
	teed := *hc
	teed.Transport = tee
	tok, err := cfg.Token(context.WithValue(forEndpoint(ctx, "token endpoint"), oauth2.HTTPClient, &teed))
	var out Token
	if err == nil {
		out = Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, ExpiresIn: Lifetime(tok.Extra("expires_in"))}
	} else {
		// x/oauth2 refuses a granted answer it cannot read whole (an
		// expires_in of 3599.5, TestLibraryRefusesOddExpiresIn): read what
		// was granted from the answer itself.
		var re *oauth2.RetrieveError
		g, ok := tee.granted()
		if errors.As(err, &re) || !ok || g.AccessToken == "" && g.RefreshToken == "" {
			return Token{}, tokenError(ctx, ep.TokenURL, err, rec.Denied())
		}
		out = g
	}
	if !headerSafe(out.AccessToken) {
		return Token{RefreshToken: out.RefreshToken}, &Error{Kind: KindProtocol, Endpoint: "token endpoint", Origin: text.Origin(ep.TokenURL),
			Detail: "the granted access token is missing or has characters a header cannot carry"}
	}
	return out, nil
}

// headerSafe reports whether s is non-empty visible ASCII without spaces.
func headerSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// audience is a client assertion's aud: the token endpoint, and the
// issuer when discovered, which RFC 7523's revision makes the audience
// (an authorization server accepts an assertion naming it either way).
func audience(ep Endpoint) jwt.ClaimStrings {
	if ep.Issuer == "" || ep.Issuer == ep.TokenURL {
		return jwt.ClaimStrings{ep.TokenURL}
	}
	return jwt.ClaimStrings{ep.Issuer, ep.TokenURL}
}

// assertion signs an RFC 7523 client assertion for clientID with audience
// aud, valid for AssertionLifetime.
func assertion(key crypto.Signer, kid, clientID string, aud jwt.ClaimStrings, now time.Time) (string, error) {
	var method jwt.SigningMethod
	switch k := key.(type) {
	case *rsa.PrivateKey:
		method = jwt.SigningMethodRS256
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			method = jwt.SigningMethodES256
		case elliptic.P384():
			method = jwt.SigningMethodES384
		case elliptic.P521():
			method = jwt.SigningMethodES512
		default:
			return "", errors.New("unsupported elliptic curve")
		}
	case ed25519.PrivateKey:
		method = jwt.SigningMethodEdDSA
	case nil:
		return "", errors.New("no private key")
	default:
		return "", fmt.Errorf("unsupported key type %T", key)
	}
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	t := jwt.NewWithClaims(method, jwt.RegisteredClaims{
		Issuer: clientID, Subject: clientID, Audience: aud,
		ID: hex.EncodeToString(jti[:]), IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AssertionLifetime)),
	})
	if kid != "" {
		t.Header["kid"] = kid
	}
	return t.SignedString(key)
}

// ParsePrivateKey parses a PEM private key for private_key_jwt: PKCS #8
// ("PRIVATE KEY": RSA, ECDSA or Ed25519), PKCS #1 ("RSA PRIVATE KEY") or
// SEC 1 ("EC PRIVATE KEY"). Errors never quote the key.
func ParsePrivateKey(pemText string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block type %q is not a private key", text.Truncate(block.Type, 32))
	}
	if err != nil {
		return nil, errors.New("the PEM block does not hold a parsable private key")
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if _, err := assertion(k, "", "x", jwt.ClaimStrings{"x"}, time.Now()); err != nil {
			return nil, err
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("unsupported key type %T", key)
}
