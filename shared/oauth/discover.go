package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
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
// Bearer challenge naming resource_metadata (without one, the RFC 9728
// well-known URIs on the server's origin are asked); that document (its resource
// must equal serverURL) names the authorization server, whose RFC 8414 or
// OIDC metadata names the token endpoint. Each URL is judged by the policy
// before it is asked; a refusal is KindDenied and ends discovery. Documents
// are read into go-sdk's oauthex types, at most 1 MiB each.
func (c *Client) Discover(ctx context.Context, serverURL string) (Metadata, error) {
	const mcpServer = "MCP server"
	if err := c.checkURL(mcpServer, serverURL); err != nil {
		return Metadata{}, err
	}
	hc, rec := c.recording()
	req, err := http.NewRequestWithContext(forEndpoint(ctx, mcpServer), http.MethodPost, serverURL, strings.NewReader(initialize))
	if err != nil {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: text.Origin(serverURL), Detail: "not a usable URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return Metadata{}, transportError(ctx, mcpServer, serverURL, err, rec.Denied())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: text.Origin(serverURL),
			Detail: fmt.Sprintf("answered HTTP %d to a request without a token, not 401 with a challenge; set token_endpoint in the credential", resp.StatusCode)}
	}
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: mcpServer, Origin: text.Origin(serverURL), Detail: "sent a malformed WWW-Authenticate header"}
	}
	var prmURL, scope string
	for _, ch := range challenges {
		if ch.Scheme == "bearer" {
			prmURL, scope = ch.Params["resource_metadata"], ch.Params["scope"]
			break
		}
	}
	const prmName = "protected-resource metadata"
	candidates := []string{prmURL}
	if prmURL == "" { // the MCP spec's fallback: the well-known URIs on the server's origin
		candidates = protectedResourceMetadataURLs(serverURL)
	}
	var prm oauthex.ProtectedResourceMetadata
	found := false
	for _, u := range candidates {
		if found, err = c.getDoc(ctx, hc, rec, prmName, u, &prm); err != nil {
			return Metadata{}, err
		}
		if found {
			prmURL = u
			break
		}
	}
	if !found {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: prmName, Origin: text.Origin(serverURL),
			Detail: "not found (the challenge's resource_metadata, else the RFC 9728 well-known paths); set token_endpoint in the credential"}
	}
	if prm.Resource != serverURL {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: prmName, Origin: text.Origin(prmURL), Detail: "its resource is not the server URL (RFC 9728 §3.3)"}
	}
	if len(prm.AuthorizationServers) == 0 {
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: prmName, Origin: text.Origin(prmURL), Detail: "names no authorization server"}
	}
	issuer := prm.AuthorizationServers[0]

	const asName = "authorization-server metadata"
	if err := c.checkURL(asName, issuer); err != nil {
		return Metadata{}, err
	}
	var asm oauthex.AuthServerMeta
	found = false
	for _, u := range authServerMetadataURLs(issuer) {
		if found, err = c.getDoc(ctx, hc, rec, asName, u, &asm); err != nil {
			return Metadata{}, err
		}
		if found {
			break
		}
	}
	switch {
	case !found:
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: asName, Origin: text.Origin(issuer), Detail: "not found at the RFC 8414 or OIDC well-known paths"}
	case strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/"):
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: asName, Origin: text.Origin(issuer), Detail: "its issuer is not the authorization server named (RFC 8414 §3.3)"}
	case asm.TokenEndpoint == "":
		return Metadata{}, &Error{Kind: KindProtocol, Endpoint: asName, Origin: text.Origin(issuer), Detail: "names no token_endpoint"}
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

// protectedResourceMetadataURLs are where RFC 9728 (and the MCP
// authorization spec) put serverURL's metadata when its challenge does not
// say: the path-based well-known URI, then the root one.
func protectedResourceMetadataURLs(serverURL string) []string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil
	}
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	if p := strings.Trim(u.EscapedPath(), "/"); p != "" {
		return []string{root + "/" + p, root}
	}
	return []string{root}
}

// maxDocument bounds a metadata document.
const maxDocument = 1 << 20

// getDoc GETs the JSON document at raw into v, after the policy allows raw.
// A 4xx answer is found false (the next well-known path may hold it).
func (c *Client) getDoc(ctx context.Context, hc *http.Client, rec *guard.Recorder, endpoint, raw string, v any) (bool, error) {
	if err := c.checkURL(endpoint, raw); err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(forEndpoint(ctx, endpoint), http.MethodGet, raw, nil)
	if err != nil {
		return false, &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "not a usable URL"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, transportError(ctx, endpoint, raw, err, rec.Denied())
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return false, nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout:
		return false, &Error{Kind: KindUnavailable, Endpoint: endpoint, Origin: text.Origin(raw), Detail: fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
	case resp.StatusCode != http.StatusOK:
		return false, &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: fmt.Sprintf("answered HTTP %d", resp.StatusCode)}
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false, &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "answered without Content-Type application/json"}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return false, transportError(ctx, endpoint, raw, err, rec.Denied())
	}
	if len(body) > maxDocument {
		return false, &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "answered over 1 MiB"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, &Error{Kind: KindProtocol, Endpoint: endpoint, Origin: text.Origin(raw), Detail: "answered a document that is not the expected JSON"}
	}
	return true, nil
}

// authServerMetadataURLs are the places the MCP authorization spec names
// for an issuer's metadata, in its order: RFC 8414 and OIDC discovery, with
// path insertion for an issuer with a path, then OIDC path appending.
func authServerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.Trim(u.Path, "/")
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath, v.RawQuery, v.Fragment = p, "", "", ""
		return v.String()
	}
	if path == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{at("/.well-known/oauth-authorization-server/" + path), at("/.well-known/openid-configuration/" + path), at("/" + path + "/.well-known/openid-configuration")}
}
