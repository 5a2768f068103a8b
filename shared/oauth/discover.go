package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxChallengeBody bounds what Discover reads of the server's 401 answer.
const maxChallengeBody = 64 << 10

// initialize is the unauthenticated request Discover sends: the first
// request of any MCP session, which a server requiring OAuth answers 401.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpfn","version":"1"}}}`

// Metadata is what Discover found.
type Metadata struct {
	Resource      string   // the protected resource (RFC 9728 "resource")
	Issuer        string   // the authorization server
	TokenEndpoint string   // its token endpoint
	AuthMethods   []string // token_endpoint_auth_methods_supported, in its order
	Scope         string   // the challenge's scope, else the resource's scopes_supported, space-separated
}

// Discover finds the token endpoint for the MCP server at serverURL the
// MCP way: an unauthenticated initialize POST must be answered 401 with a
// Bearer challenge naming resource_metadata; that document (its resource
// must equal serverURL) names the authorization server, whose RFC 8414 or
// OIDC metadata names the token endpoint. Each URL is judged by the policy
// before it is asked; a refusal is KindDenied and ends discovery.
func (c *Client) Discover(ctx context.Context, serverURL string) (Metadata, error) {
	const mcpServer = "MCP server"
	if err := c.checkURL(mcpServer, serverURL); err != nil {
		return Metadata{}, err
	}
	hc, rec := c.recording()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(initialize))
	if err != nil {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: origin(serverURL), Detail: "not a usable URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return Metadata{}, transportError(ctx, mcpServer, serverURL, err, rec.refusal())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: origin(serverURL),
			Detail: fmt.Sprintf("answered HTTP %d to a request without a token, not 401 with a challenge; set token_endpoint in the credential", resp.StatusCode)}
	}
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: origin(serverURL), Detail: "sent a malformed WWW-Authenticate header"}
	}
	var prmURL, scope string
	for _, ch := range challenges {
		if ch.Scheme == "bearer" {
			prmURL, scope = ch.Params["resource_metadata"], ch.Params["scope"]
			break
		}
	}
	if prmURL == "" {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: origin(serverURL),
			Detail: "its 401 has no Bearer challenge with resource_metadata; set token_endpoint in the credential"}
	}

	const prmName = "protected-resource metadata"
	if err := c.checkURL(prmName, prmURL); err != nil {
		return Metadata{}, err
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, prmURL, serverURL, hc)
	if err != nil {
		return Metadata{}, sdkError(ctx, prmName, prmURL, err, rec)
	}
	if len(prm.AuthorizationServers) == 0 {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: prmName, Origin: origin(prmURL), Detail: "names no authorization server"}
	}
	issuer := prm.AuthorizationServers[0]

	const asName = "authorization-server metadata"
	if err := c.checkURL(asName, issuer); err != nil {
		return Metadata{}, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return Metadata{}, sdkError(ctx, asName, issuer, err, rec)
	}
	if asm == nil {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: asName, Origin: origin(issuer), Detail: "not found at the RFC 8414 or OIDC well-known paths"}
	}
	if asm.TokenEndpoint == "" {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: asName, Origin: origin(issuer), Detail: "names no token_endpoint"}
	}
	if err := c.checkURL("token endpoint", asm.TokenEndpoint); err != nil {
		return Metadata{}, err
	}
	if scope == "" {
		scope = strings.Join(prm.ScopesSupported, " ")
	}
	return Metadata{Resource: prm.Resource, Issuer: asm.Issuer, TokenEndpoint: asm.TokenEndpoint,
		AuthMethods: asm.TokenEndpointAuthMethodsSupported, Scope: scope}, nil
}

// sdkError classifies a go-sdk metadata failure. The SDK's own text quotes
// URLs, so it is not repeated.
func sdkError(ctx context.Context, endpoint, raw string, err error, rec *recorder) *Error {
	if f := rec.failure(); f != nil || ctx.Err() != nil || isTimeout(err) {
		if f != nil {
			err = f
		}
		return transportError(ctx, endpoint, raw, err, rec.refusal())
	}
	return &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: origin(raw),
		Detail: "unusable document (status, content type, JSON, resource or issuer mismatch, PKCE support, or a URL the SDK refuses)"}
}
