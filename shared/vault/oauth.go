package vault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"golang.org/x/sync/singleflight"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
)

// OAuth timing (DESIGN.md, "One refresher").
const (
	// RefreshMargin: an access token expiring within it is refreshed (or,
	// for client credentials, fetched anew) before use.
	RefreshMargin = 60 * time.Second
	// LeaseTTL is how long a refresher's lease on a credential lasts.
	LeaseTTL = 60 * time.Second
	// TokenBudget caps the token request inside a lease; the rest of the
	// lease is left for the write-back.
	TokenBudget = 30 * time.Second
	// WriteBackTimeout bounds the write-back of a refreshed token, which
	// runs even when the caller's context has ended.
	WriteBackTimeout = 10 * time.Second
	// PendingStage labels the version a refresher writes before it moves
	// AWSCURRENT onto it.
	PendingStage = "MCPFN_PENDING"

	maxCachedTokens = 1024
	maxPollDelay    = 500 * time.Millisecond
)

// SecretsWriter is the part of *secretsmanager.Client that writes a
// refreshed token back: a new version labelled PendingStage, then
// AWSCURRENT moved onto it from the version read (a compare-and-swap).
type SecretsWriter interface {
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	UpdateSecretVersionStage(ctx context.Context, in *secretsmanager.UpdateSecretVersionStageInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error)
}

var _ SecretsWriter = (*secretsmanager.Client)(nil)

// OAuth configures OAuth credentials (WithOAuth).
//   - Secrets writes refreshed tokens back; required (nil panics).
//   - HTTPClient makes every OAuth request; nil means
//     guard.NewClientWithPolicy(Policy, oauth.DefaultTimeout). Give a
//     guarded client.
//   - Policy judges every OAuth URL before a request; nil: guard.Default().
//   - Now is the clock; nil: time.Now.
//   - Logger gets one line per refresh, wait or fetch, never a secret;
//     nil: none.
type OAuth struct {
	Secrets    SecretsWriter
	HTTPClient *http.Client
	Policy     *guard.Policy
	Now        func() time.Time
	Logger     *slog.Logger
}

// WithOAuth enables mcp_oauth and oauth_client_credentials credentials.
func WithOAuth(o OAuth) Option {
	if o.Secrets == nil {
		panic("vault: WithOAuth needs a SecretsWriter")
	}
	st := &oauthState{w: o.Secrets, client: &oauth.Client{HTTP: o.HTTPClient, Policy: o.Policy, Now: o.Now},
		now: o.Now, log: o.Logger, cache: map[string]ccEntry{}}
	if st.now == nil {
		st.now = time.Now
	}
	if st.log == nil {
		st.log = slog.New(slog.DiscardHandler)
	}
	return func(r *Resolver) { r.oauth = st }
}

type oauthState struct {
	w      SecretsWriter
	client *oauth.Client
	now    func() time.Time
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]ccEntry
	sf    singleflight.Group
}

type ccEntry struct {
	token   string
	expires time.Time
	secrets []string
}

// Refresh gets a new token for m after the server refused m.Token (a 401
// on a token believed valid). An mcp_oauth credential is refreshed unless
// the vault already holds another fresh token, which is returned instead;
// a client-credentials token is fetched anew. Call it once per refusal and
// connect once more. A static_bearer match is an error wrapping
// ErrNotRefreshable. Errors are as for Lookup.
func (r *Resolver) Refresh(ctx context.Context, m Match) (Match, error) {
	if !m.Found || m.Type == TypeStaticBearer {
		return m, fmt.Errorf("%w: vault %s holds a static token", ErrNotRefreshable, m.VaultID)
	}
	if r.oauth == nil {
		return Match{}, fmt.Errorf("%w: vault %s", ErrOAuthDisabled, m.VaultID)
	}
	server, err := NormalizeURL(m.ServerURL)
	if err != nil {
		return Match{}, err
	}
	var out Match
	if m.Type == TypeMCPOAuth {
		out, err = r.oauthToken(ctx, m.VaultID, m.ServerURL, m.Token, nil)
	} else {
		snap, rerr := r.read(ctx, m.VaultID)
		if rerr != nil {
			return Match{}, rerr
		}
		i := snap.find(server)
		switch {
		case i < 0:
			return Match{Hints: m.Hints}, nil
		case snap.creds[i].Type != TypeClientCredentials:
			out, err = r.resolve(ctx, m.VaultID, m.ServerURL, snap.creds[i], snap)
		default:
			out, err = r.clientToken(ctx, m.VaultID, m.ServerURL, snap.creds[i], m.Token)
		}
	}
	if err != nil {
		return Match{}, err
	}
	out.Hints = m.Hints
	out.Secrets = union(m.Secrets, out.Secrets)
	return out, nil
}

// fresh reports whether c's access token may be used at now without a refresh.
func fresh(c Credential, now time.Time) bool {
	return c.ExpiresAt.IsZero() || now.Add(RefreshMargin).Before(c.ExpiresAt)
}

// errConflict: the vault changed since it was read; read it again.
var errConflict = errors.New("vault: changed since read")

// oauthToken returns a usable token of the mcp_oauth credential for
// serverURL in vault id: the stored one if fresh and not refused, else one
// refreshed under a lease (DESIGN.md, "One refresher"). snap, when set, is
// the version already read.
func (r *Resolver) oauthToken(ctx context.Context, id, serverURL, refused string, snap *snapshot) (Match, error) {
	o := r.oauth
	server, err := NormalizeURL(serverURL)
	if err != nil {
		return Match{}, err
	}
	holder := randomHex(16)
	var seen []string
	delay := 25 * time.Millisecond
	waited := false
	for {
		if snap == nil {
			if snap, err = r.read(ctx, id); err != nil {
				return Match{}, err
			}
		}
		i := snap.find(server)
		if i < 0 {
			return Match{}, nil
		}
		c := snap.creds[i]
		if c.Type != TypeMCPOAuth {
			return r.resolve(ctx, id, serverURL, c, snap)
		}
		seen = union(seen, c.secrets())
		now := o.now()
		if c.Token != refused && fresh(c, now) {
			if waited {
				o.log.LogAttrs(ctx, slog.LevelInfo, "oauth token refreshed by another instance", r.attrs(id, server)...)
			}
			return Match{Found: true, VaultID: id, Type: c.Type, ServerURL: serverURL, Token: c.Token, Secrets: seen}, nil
		}
		if c.Refresh == nil {
			why := fmt.Sprintf("the access token expired at %s", c.ExpiresAt.UTC().Format(time.RFC3339))
			if c.Token == refused {
				why = "the server refused the access token"
			}
			return Match{}, r.credErr(id, server, oauth.Errorf(oauth.KindRefused, "%s and the credential has no refresh block", why))
		}
		if l := c.Lease; l != nil && l.Holder != holder && now.Before(l.ExpiresAt) {
			if !waited {
				o.log.LogAttrs(ctx, slog.LevelInfo, "oauth refresh in progress elsewhere; waiting", append(r.attrs(id, server), slog.Time("lease_expires_at", l.ExpiresAt))...)
			}
			waited = true
			if err := sleep(ctx, delay); err != nil {
				return Match{}, r.credErr(id, server, &oauth.Error{Kind: oauth.KindUnavailable, Endpoint: "token endpoint", Detail: "another instance's refresh did not finish within the budget"})
			}
			delay = min(2*delay, maxPollDelay)
			snap = nil
			continue
		}
		if c.Lease != nil {
			o.log.LogAttrs(ctx, slog.LevelWarn, "oauth refresh lease expired; taking it over", r.attrs(id, server)...)
		}
		leased := c
		leased.Lease = &Lease{Holder: holder, ExpiresAt: now.Add(LeaseTTL).Truncate(time.Second)}
		next, err := r.swap(ctx, id, snap, i, leased)
		switch {
		case errors.Is(err, errConflict):
			snap = nil
			continue
		case err != nil:
			return Match{}, err
		}
		return r.spend(ctx, id, serverURL, server, c, holder, next, seen)
	}
}

// spend sends c's refresh token, once, while holding the lease, writes the
// result back, and only then returns the new token.
func (r *Resolver) spend(ctx context.Context, id, serverURL, server string, c Credential, holder string, snap *snapshot, seen []string) (Match, error) {
	o := r.oauth
	rf := c.Refresh
	tctx, cancel := context.WithTimeout(ctx, TokenBudget)
	defer cancel()
	ep := oauth.Endpoint{TokenURL: rf.TokenEndpoint, ClientID: rf.ClientID, Scope: rf.Scope, Resource: rf.Resource,
		Auth: oauth.Auth{Method: rf.Auth.Type, ClientSecret: rf.Auth.ClientSecret}}
	tok, terr := o.client.Refresh(tctx, ep, rf.RefreshToken)
	// The write-back outlives the caller's context: a rotated refresh
	// token that is not stored is lost.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), WriteBackTimeout)
	defer wcancel()
	spent := rf.RefreshToken
	if terr != nil {
		release := func(cur Credential) Credential { cur.Lease = nil; return cur }
		if err := r.writeBack(wctx, id, server, spent, snap, release); err != nil && !errors.Is(err, errSuperseded) {
			o.log.LogAttrs(ctx, slog.LevelWarn, "oauth refresh lease not released", append(r.attrs(id, server), slog.String("error", err.Error()))...)
		}
		return Match{}, r.credErr(id, server, terr)
	}
	seen = union(seen, []string{tok.AccessToken, tok.RefreshToken})
	var expires time.Time
	if tok.ExpiresIn > 0 {
		expires = o.now().Add(tok.ExpiresIn).Truncate(time.Second)
	}
	update := func(cur Credential) Credential {
		cur.Lease = nil
		cur.Token = tok.AccessToken
		cur.ExpiresAt = expires
		rf := *cur.Refresh
		if tok.RefreshToken != "" {
			rf.RefreshToken = tok.RefreshToken
		}
		cur.Refresh = &rf
		return cur
	}
	switch err := r.writeBack(wctx, id, server, spent, snap, update); {
	case errors.Is(err, errSuperseded):
		o.log.LogAttrs(ctx, slog.LevelWarn, "oauth credential replaced during its refresh; the new token is used but not stored", r.attrs(id, server)...)
	case err != nil:
		return Match{}, fmt.Errorf("vault %s: credential for %s: the refreshed token could not be stored: %w", id, originOf(server), err)
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "oauth token refreshed", append(r.attrs(id, server),
		slog.Bool("rotated", tok.RefreshToken != "" && tok.RefreshToken != spent), slog.Time("expires_at", expires))...)
	return Match{Found: true, VaultID: id, Type: TypeMCPOAuth, ServerURL: serverURL, Token: tok.AccessToken, Secrets: seen}, nil
}

// errSuperseded: the credential no longer holds the refresh token a
// write-back was for (someone replaced it); nothing was written.
var errSuperseded = errors.New("vault: credential superseded")

// writeBack applies apply to the credential for server, if it still holds
// the refresh token spent, and swaps it in, reading again after each
// conflict. snap is the version to start from.
func (r *Resolver) writeBack(ctx context.Context, id, server, spent string, snap *snapshot, apply func(Credential) Credential) error {
	for {
		if snap == nil {
			var err error
			if snap, err = r.read(ctx, id); err != nil {
				return err
			}
		}
		i := snap.find(server)
		if i < 0 {
			return errSuperseded
		}
		cur := snap.creds[i]
		if cur.Type != TypeMCPOAuth || cur.Refresh == nil || cur.Refresh.RefreshToken != spent {
			return errSuperseded
		}
		_, err := r.swap(ctx, id, snap, i, apply(cur))
		if !errors.Is(err, errConflict) {
			return err
		}
		snap = nil
	}
}

// swap writes snap with credential i replaced by c as a new version and
// moves AWSCURRENT onto it from snap's version: errConflict when another
// version became current first. It returns the version written.
func (r *Resolver) swap(ctx context.Context, id string, snap *snapshot, i int, c Credential) (*snapshot, error) {
	raws := slices.Clone(snap.raws)
	raws[i] = encode(c)
	doc := encodeDoc(raws)
	if len(doc) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: vault %s: a refreshed credential makes it %d bytes, at most %d", ErrVaultMalformed, id, len(doc), MaxSecretBytes)
	}
	name := r.prefix + id
	put, err := r.oauth.w.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(name), SecretString: aws.String(string(doc)),
		ClientRequestToken: aws.String(randomHex(16)), VersionStages: []string{PendingStage},
	})
	if err != nil {
		return nil, fmt.Errorf("vault: write vault %s (secret %s): %w", id, name, err)
	}
	version := aws.ToString(put.VersionId)
	_, err = r.oauth.w.UpdateSecretVersionStage(ctx, &secretsmanager.UpdateSecretVersionStageInput{
		SecretId: aws.String(name), VersionStage: aws.String("AWSCURRENT"),
		MoveToVersionId: aws.String(version), RemoveFromVersionId: aws.String(snap.version),
	})
	if err != nil {
		// Refused because another version is current (the compare failed),
		// or a lost answer to a move that happened: the current version says.
		cur, rerr := r.read(ctx, id)
		switch {
		case rerr != nil:
			return nil, fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
		case cur.version == version:
		case cur.version != snap.version:
			return nil, errConflict
		default:
			return nil, fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
		}
	}
	creds := slices.Clone(snap.creds)
	creds[i] = c
	return &snapshot{version: version, raws: raws, creds: creds}, nil
}

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

func (r *Resolver) credErr(id, server string, err error) error {
	return fmt.Errorf("vault %s: credential for %s: %w", id, originOf(server), err)
}

func (r *Resolver) attrs(id, server string) []slog.Attr {
	return []slog.Attr{slog.String("vault_id", id), slog.String("server", originOf(server))}
}

// originOf is the origin of a normalised URL.
func originOf(norm string) string {
	o, _, _ := parts(norm)
	return o
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// union appends to a the strings of b it lacks, and drops empty ones.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
