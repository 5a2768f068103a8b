package vault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

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
	// lease is left for the write-back. Within a context that has a
	// deadline, the request gets at most two thirds of what is left.
	TokenBudget = 30 * time.Second
	// WriteBackTimeout caps the write-back of a refreshed token (or of a
	// dead grant), which runs within the caller's context.
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
//   - Count is told MetricOAuthRefreshes or MetricOAuthRefreshFailures once
//     per refresh this process made (not one it waited for); nil: none.
type OAuth struct {
	Secrets    SecretsWriter
	HTTPClient *http.Client
	Policy     *guard.Policy
	Now        func() time.Time
	Logger     *slog.Logger
	Count      func(metric string)
}

// Metric names (EMF, by Function): the refresh-token grants a process
// spent, and those that gave no usable stored token.
const (
	MetricOAuthRefreshes       = "OAuthRefreshes"
	MetricOAuthRefreshFailures = "OAuthRefreshFailures"
)

// WithOAuth enables mcp_oauth and oauth_client_credentials credentials.
func WithOAuth(o OAuth) Option {
	if o.Secrets == nil {
		panic("vault: WithOAuth needs a SecretsWriter")
	}
	st := &oauthState{w: o.Secrets, client: &oauth.Client{HTTP: o.HTTPClient, Policy: o.Policy, Now: o.Now},
		now: o.Now, log: o.Logger, count: o.Count, cache: map[string]ccEntry{}}
	if st.count == nil {
		st.count = func(string) {}
	}
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
	count  func(metric string)

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
			r.logWaited(ctx, id, server, waited)
			return Match{Found: true, VaultID: id, Type: c.Type, ServerURL: serverURL, Token: c.Token, Secrets: seen}, nil
		}
		if err := r.refreshable(id, server, c, refused); err != nil {
			return Match{}, err
		}
		if c.Lease.heldElsewhere(holder, now) {
			if err := r.awaitLease(ctx, id, server, c.Lease, waited, delay); err != nil {
				return Match{}, err
			}
			waited, delay, snap = true, min(2*delay, maxPollDelay), nil
			continue
		}
		next, err := r.takeLease(ctx, id, server, snap, i, holder, now)
		switch {
		case errors.Is(err, errConflict):
			snap = nil
			continue
		case err != nil:
			return Match{}, err
		}
		m, err := r.spend(ctx, id, serverURL, server, c, holder, next, seen)
		r.oauth.count(map[bool]string{true: MetricOAuthRefreshes, false: MetricOAuthRefreshFailures}[err == nil])
		return m, err
	}
}

// heldElsewhere reports whether l is another holder's lease, unexpired at now.
func (l *Lease) heldElsewhere(holder string, now time.Time) bool {
	return l != nil && l.Holder != holder && now.Before(l.ExpiresAt)
}

// logWaited notes that another instance's refresh served this one, when
// it waited for it.
func (r *Resolver) logWaited(ctx context.Context, id, server string, waited bool) {
	if waited {
		r.oauth.log.LogAttrs(ctx, slog.LevelInfo, "oauth token refreshed by another instance", r.attrs(id, server)...)
	}
}

// takeLease writes a lease for holder on credential i of snap, taking over
// an expired one, and returns the vault as written; errConflict when the
// vault changed since snap.
func (r *Resolver) takeLease(ctx context.Context, id, server string, snap *snapshot, i int, holder string, now time.Time) (*snapshot, error) {
	leased := snap.creds[i]
	if leased.Lease != nil {
		r.oauth.log.LogAttrs(ctx, slog.LevelWarn, "oauth refresh lease expired; taking it over", r.attrs(id, server)...)
	}
	leased.Lease = &Lease{Holder: holder, ExpiresAt: now.Add(LeaseTTL).Truncate(time.Second)}
	return r.swap(ctx, id, snap, i, leased)
}

// refreshable is nil when c's token may be refreshed: it has a refresh
// block whose grant is not recorded as dead.
func (r *Resolver) refreshable(id, server string, c Credential, refused string) error {
	if c.Refresh == nil {
		why := fmt.Sprintf("the access token expired at %s", c.ExpiresAt.UTC().Format(time.RFC3339))
		if c.Token == refused {
			why = "the server refused the access token"
		}
		return r.credErr(id, server, oauth.Errorf(oauth.KindRefused, "%s and the credential has no refresh block", why))
	}
	if c.Dead.holds(c.Refresh) {
		return r.deadErr(id, server, c.Refresh, c.Dead)
	}
	return nil
}

// awaitLease waits delay for another instance's refresh under lease l,
// logging the first wait; it fails when ctx ends first.
func (r *Resolver) awaitLease(ctx context.Context, id, server string, l *Lease, waited bool, delay time.Duration) error {
	if !waited {
		r.oauth.log.LogAttrs(ctx, slog.LevelInfo, "oauth refresh in progress elsewhere; waiting", append(r.attrs(id, server), slog.Time("lease_expires_at", l.ExpiresAt))...)
	}
	if err := sleep(ctx, delay); err != nil {
		return r.credErr(id, server, &oauth.Error{Kind: oauth.KindUnavailable, Endpoint: "token endpoint", Detail: "another instance's refresh did not finish within the budget"})
	}
	return nil
}

// spend sends c's refresh token, once, while holding the lease, writes the
// result back, and only then returns the new token. A refusal that ends
// the grant is written back as c's DeadGrant; a token granted but not
// stored is an error wrapping oauth.ErrRefused and is not used.
func (r *Resolver) spend(ctx context.Context, id, serverURL, server string, c Credential, holder string, snap *snapshot, seen []string) (Match, error) {
	o := r.oauth
	rf := c.Refresh
	tctx, cancel := context.WithTimeout(ctx, tokenBudget(ctx))
	defer cancel()
	ep := oauth.Endpoint{TokenURL: rf.TokenEndpoint, ClientID: rf.ClientID, Scope: rf.Scope, Resource: rf.Resource,
		Auth: oauth.Auth{Method: rf.Auth.Type, ClientSecret: rf.Auth.ClientSecret}}
	tok, terr := o.client.Refresh(tctx, ep, rf.RefreshToken)
	// The write-back runs within ctx (credentials.Credential: the work item's
	// operation budget): a Secrets Manager that stalls fails this item,
	// not the invocation.
	wctx, wcancel := context.WithTimeout(ctx, WriteBackTimeout)
	defer wcancel()
	spent := rf.RefreshToken
	seen = union(seen, []string{tok.AccessToken, tok.RefreshToken})
	if terr != nil && tok.RefreshToken == "" {
		dead := deadGrant(terr, spent, o.now())
		release := func(cur Credential) Credential { cur.Lease, cur.Dead = nil, dead; return cur }
		if err := r.writeBack(wctx, id, server, spent, snap, release); err != nil && !errors.Is(err, errSuperseded) {
			o.log.LogAttrs(ctx, slog.LevelWarn, "oauth refresh lease not released", append(r.attrs(id, server), slog.String("error", err.Error()))...)
		} else if dead != nil {
			o.log.LogAttrs(ctx, slog.LevelWarn, "oauth grant refused; recorded as dead", append(r.attrs(id, server), slog.String("oauth_error", dead.Error))...)
		}
		return Match{}, r.credErr(id, server, terr)
	}
	// A token was granted: whatever else is wrong, the rotated refresh
	// token is stored first. Without a usable access token (terr set) the
	// old one is kept, marked expired.
	expires := o.now().Truncate(time.Second)
	access := ""
	if terr == nil {
		access, expires = tok.AccessToken, o.now().Add(tok.ExpiresIn).Truncate(time.Second)
	}
	update := func(cur Credential) Credential {
		cur.Lease, cur.Dead = nil, nil
		if access != "" {
			cur.Token = access
		}
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
		o.log.LogAttrs(ctx, slog.LevelError, "oauth token granted but not stored; the refresh token sent is spent", append(r.attrs(id, server), slog.String("error", err.Error()))...)
		return Match{}, r.credErr(id, server, oauth.Errorf(oauth.KindRefused,
			"the token endpoint granted a new token, but it could not be stored, so it is not used and the refresh token sent is spent (%v)", err))
	}
	rotated := tok.RefreshToken != "" && tok.RefreshToken != spent
	if terr != nil {
		o.log.LogAttrs(ctx, slog.LevelWarn, "oauth refresh answer without a usable access token; the rotated refresh token is stored", append(r.attrs(id, server), slog.Bool("rotated", rotated))...)
		return Match{}, r.credErr(id, server, terr)
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "oauth token refreshed", append(r.attrs(id, server),
		slog.Bool("rotated", rotated), slog.Time("expires_at", expires))...)
	return Match{Found: true, VaultID: id, Type: TypeMCPOAuth, ServerURL: serverURL, Token: tok.AccessToken, Secrets: seen}, nil
}

// tokenBudget is the time a token request may take within ctx: TokenBudget,
// and at most two thirds of what is left of ctx, so the write-back keeps
// a third.
func tokenBudget(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return TokenBudget
	}
	return max(min(TokenBudget, time.Until(d)*2/3), 0)
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
