package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ErrIssuer is returned when the -oauth-issuer cannot check tokens: its
// RFC 8414 metadata is unreachable, names another issuer or lists no
// introspection_endpoint.
var ErrIssuer = errors.New("exampleserver: unusable authorization server")

// metadataPath is where the protected resource's RFC 9728 metadata is
// served, for the resource at /mcp.
const metadataPath = "/.well-known/oauth-protected-resource/mcp"

// introspectTimeout bounds each metadata and introspection request.
const introspectTimeout = 10 * time.Second

// protect registers the RFC 9728 metadata of the resource at base+"/mcp"
// on mux and returns h behind go-sdk's auth.RequireBearerToken: a request
// without a token that issuer's introspection endpoint (RFC 7662, found in
// its RFC 8414 metadata) reports active is answered 401 with a
// WWW-Authenticate challenge naming the metadata. Errors wrap ErrIssuer.
func protect(ctx context.Context, issuer, base string, mux *http.ServeMux, h http.Handler) (http.Handler, error) {
	client := &http.Client{Timeout: introspectTimeout}
	introspection, err := introspectionEndpoint(ctx, client, issuer)
	if err != nil {
		return nil, err
	}
	mux.Handle(metadataPath, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               base + "/mcp",
		AuthorizationServers:   []string{issuer},
		BearerMethodsSupported: []string{"header"},
	}))
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return introspect(ctx, client, introspection, token)
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    base + metadataPath,
		AllowMissingExpiration: true, // a token the issuer gave no expiry
	})(h), nil
}

// introspectionEndpoint reads issuer's RFC 8414 metadata.
func introspectionEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(issuer, "/")+"/.well-known/oauth-authorization-server", nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrIssuer, err)
	}
	var meta struct {
		Issuer        string `json:"issuer"`
		Introspection string `json:"introspection_endpoint"`
	}
	if err := getJSON(client, req, &meta); err != nil {
		return "", fmt.Errorf("%w: %s metadata: %v", ErrIssuer, issuer, err)
	}
	switch {
	case meta.Issuer != issuer:
		return "", fmt.Errorf("%w: %s metadata names issuer %q", ErrIssuer, issuer, meta.Issuer)
	case meta.Introspection == "":
		return "", fmt.Errorf("%w: %s metadata lists no introspection_endpoint", ErrIssuer, issuer)
	}
	return meta.Introspection, nil
}

// introspect asks the RFC 7662 endpoint about token. An inactive token
// wraps auth.ErrInvalidToken; a failed request is another error (a 500).
func introspect(ctx context.Context, client *http.Client, endpoint, token string) (*auth.TokenInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var r struct {
		Active bool   `json:"active"`
		Exp    int64  `json:"exp"`
		Scope  string `json:"scope"`
	}
	if err := getJSON(client, req, &r); err != nil {
		return nil, fmt.Errorf("token introspection: %w", err)
	}
	if !r.Active {
		return nil, fmt.Errorf("%w: the authorization server reports it inactive", auth.ErrInvalidToken)
	}
	info := &auth.TokenInfo{Scopes: strings.Fields(r.Scope)}
	if r.Exp != 0 {
		info.Expiration = time.Unix(r.Exp, 0)
	}
	return info, nil
}

// getJSON sends req and decodes a 200 answer of at most 1 MiB into v.
func getJSON(client *http.Client, req *http.Request, v any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
