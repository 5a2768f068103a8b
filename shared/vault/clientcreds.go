package vault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mcpfn/mcpfn/shared/oauth"
)

// clientToken returns a client-credentials token for c, from the cache
// unless it is refused or expires within RefreshMargin.
func (r *Resolver) clientToken(ctx context.Context, id, serverURL string, c Credential, refused string) (Match, error) {
	o := r.oauth
	key := cacheKey(c)
	match := func(e ccEntry) Match {
		return Match{Found: true, VaultID: id, Type: c.Type, ServerURL: serverURL, Token: e.token, Secrets: e.secrets}
	}
	if e, ok := o.cached(key, refused); ok {
		return match(e), nil
	}
	v, err, _ := o.sf.Do(key, func() (any, error) {
		if e, ok := o.cached(key, refused); ok {
			return e, nil
		}
		return r.fetchClientToken(ctx, id, serverURL, c, key)
	})
	if err != nil {
		return Match{}, err
	}
	return match(v.(ccEntry)), nil
}

func (r *Resolver) fetchClientToken(ctx context.Context, id, serverURL string, c Credential, key string) (ccEntry, error) {
	o := r.oauth
	server := c.ServerURL
	cl := c.Client
	ep := oauth.Endpoint{TokenURL: cl.TokenEndpoint, ClientID: cl.ClientID, Scope: cl.Scope, Resource: cl.Resource}
	var methods []string
	discovered := false
	if ep.TokenURL == "" {
		md, err := o.client.Discover(ctx, serverURL)
		if err != nil {
			return ccEntry{}, r.credErr(id, server, err)
		}
		ep.TokenURL, ep.Issuer, methods, discovered = md.TokenEndpoint, md.Issuer, md.AuthMethods, true
		if ep.Scope == "" {
			ep.Scope = md.Scope
		}
	}
	ep.Auth = oauth.Auth{Method: oauth.AuthClientSecretBasic, ClientSecret: cl.ClientSecret}
	switch {
	case cl.Auth != nil && cl.Auth.Type == oauth.AuthPrivateKeyJWT:
		key, err := oauth.ParsePrivateKey(cl.Auth.PrivateKey)
		if err != nil {
			return ccEntry{}, fmt.Errorf("%w: vault %s: private_key: %v", ErrVaultMalformed, id, err)
		}
		ep.Auth = oauth.Auth{Method: oauth.AuthPrivateKeyJWT, PrivateKey: key, KeyID: cl.Auth.KeyID}
	case cl.Auth != nil:
		ep.Auth.Method = cl.Auth.Type
	default:
		for _, m := range methods {
			if m == oauth.AuthClientSecretBasic || m == oauth.AuthClientSecretPost {
				ep.Auth.Method = m
				break
			}
		}
	}
	tok, err := o.client.ClientCredentials(ctx, ep)
	if err != nil {
		return ccEntry{}, r.credErr(id, server, err)
	}
	e := ccEntry{token: tok.AccessToken, secrets: union(c.secrets(), []string{tok.AccessToken})}
	if tok.ExpiresIn > 0 {
		e.expires = o.now().Add(tok.ExpiresIn)
		o.store(key, e)
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "oauth client-credentials token fetched", append(r.attrs(id, server),
		slog.String("auth_method", ep.Auth.Method), slog.Bool("discovered", discovered), slog.Duration("expires_in", tok.ExpiresIn))...)
	return e, nil
}

func (o *oauthState) cached(key, refused string) (ccEntry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.cache[key]
	if !ok || e.token == refused || !o.now().Add(RefreshMargin).Before(e.expires) {
		return ccEntry{}, false
	}
	return e, true
}

func (o *oauthState) store(key string, e ccEntry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cache) >= maxCachedTokens {
		now := o.now()
		for k, v := range o.cache {
			if !now.Add(RefreshMargin).Before(v.expires) {
				delete(o.cache, k)
			}
		}
		for k := range o.cache {
			if len(o.cache) < maxCachedTokens {
				break
			}
			delete(o.cache, k)
		}
	}
	o.cache[key] = e
}

// cacheKey identifies a client-credentials token: server, client, scope,
// and everything else that shapes the request, secrets included, so a
// token is only reused for the same credential.
func cacheKey(c Credential) string {
	cl := c.Client
	parts := []string{c.ServerURL, cl.ClientID, cl.Scope, cl.Resource, cl.TokenEndpoint, cl.ClientSecret}
	if cl.Auth != nil {
		parts = append(parts, cl.Auth.Type, cl.Auth.PrivateKey, cl.Auth.KeyID)
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
