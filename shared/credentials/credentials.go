// Package credentials resolves a work item's credential for its MCP
// server: a vault lookup (shared/vault), the mcp.Config authorization it
// gives, and the one refresh a refused OAuth token gets per work item.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Vaults finds a server's credential in vaults, and refreshes an OAuth
// one the server refused.
type Vaults interface {
	Lookup(ctx context.Context, vaultIDs []string, serverURL string) (vault.Match, error)
	Refresh(ctx context.Context, m vault.Match) (vault.Match, error)
}

var _ Vaults = (*vault.Resolver)(nil)

// Item is the work item a credential is resolved for (*runner.Item): its
// operation budget, its scrubber and summary line, and the attributes that
// name it in a log line.
type Item interface {
	OperationContext(ctx context.Context) (context.Context, context.CancelFunc)
	AddSecret(s string)
	Scrub(s string) string
	Annotate(attrs ...slog.Attr)
	LogAttrs() []slog.Attr
}

// Auth is how a work item authorizes to its server: nothing, a static
// bearer token, or an OAuth credential's token that a 401 or 403 refreshes
// once (OAuth). Config puts it into an mcp.Config.
type Auth struct {
	Token string
	OAuth *Refresher
}

// Config returns cfg authorized by a.
func (a Auth) Config(cfg mcp.Config) mcp.Config {
	if a.OAuth != nil {
		cfg.OAuth = a.OAuth
		return cfg
	}
	cfg.BearerToken = a.Token
	return cfg
}

// Credential returns the authorization of the first credential in
// vaultIDs for serverURL: none (connect anonymously) when none matches or
// vaultIDs is empty. An OAuth credential's token is fresh (refreshed
// first when it expires within a minute). The lookup, any refresh and its
// write-back run within the item's operation budget. It logs the lookup's hints to
// log, registers every token and secret the lookup saw with it.AddSecret
// and notes which vault matched on the summary line. Errors are
// *wire.Error: a malformed vault id, a missing vault or unusable
// credentials are InvalidRequest; an OAuth failure has its OAuthErrorType;
// any other failure is Internal.
func Credential(ctx context.Context, v Vaults, it Item, vaultIDs []string, serverURL string, log *slog.Logger) (Auth, error) {
	if len(vaultIDs) == 0 {
		return Auth{}, nil
	}
	// The lookup, its token request and its write-back end with the
	// operation budget: the reserve stays for the store, the ledger and
	// the report.
	lctx, cancel := it.OperationContext(ctx)
	defer cancel()
	m, err := v.Lookup(lctx, vaultIDs, serverURL)
	if err != nil {
		return Auth{}, vaultError(err, "the vault lookup failed")
	}
	for _, hint := range m.Hints {
		log.LogAttrs(ctx, slog.LevelWarn, "credential hint", append(it.LogAttrs(), slog.String("hint", it.Scrub(hint)))...)
	}
	if !m.Found {
		it.Annotate(slog.String("credential", "none"))
		return Auth{}, nil
	}
	register(it, m)
	it.Annotate(slog.String("credential", "vault:"+m.VaultID))
	if m.Type == "" || m.Type == vault.TypeStaticBearer {
		return Auth{Token: m.Token}, nil
	}
	it.Annotate(slog.String("credential_type", m.Type))
	return Auth{Token: m.Token, OAuth: &Refresher{v: v, it: it, m: m}}, nil
}

// register adds m's token and every secret the lookup saw to it's scrubber.
func register(it Item, m vault.Match) {
	it.AddSecret(m.Token)
	for _, s := range m.Secrets {
		it.AddSecret(s)
	}
}

// vaultError is the *wire.Error of a failed Lookup or Refresh.
func vaultError(err error, what string) error {
	switch {
	case errors.Is(err, vault.ErrBadVaultID), errors.Is(err, vault.ErrVaultNotFound),
		errors.Is(err, vault.ErrVaultMalformed), errors.Is(err, vault.ErrBadURL):
		return wire.Errorf(wire.InvalidRequest, err, "vault_ids")
	case wire.DeclaredType(err) != "":
		return wire.Errorf(wire.DeclaredType(err), err, "the OAuth credential could not be used")
	}
	return wire.Errorf(wire.Internal, err, "%s", what)
}

// Refresher is an OAuth credential's token for mcp.Config.OAuth: its
// Authorize, after the server refused the token, refreshes it once per
// work item (vault.Resolver.Refresh) and the SDK sends the request again;
// a second refusal is the work item's outcome.
type Refresher struct {
	v  Vaults
	it Item

	mu        sync.Mutex
	m         vault.Match
	refreshed bool
}

var errRefreshedOnce = errors.New("credentials: the credential was refreshed once for this work item already")

// TokenSource returns the current token.
func (r *Refresher) TokenSource(context.Context) (oauth2.TokenSource, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: r.m.Token, TokenType: "Bearer"}), nil
}

// Authorize refreshes the token the first time; later it fails.
func (r *Refresher) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refreshed {
		return errRefreshedOnce
	}
	r.refreshed = true
	m, err := r.v.Refresh(ctx, r.m)
	if err != nil {
		return fmt.Errorf("refresh after the server refused the token: %w", err)
	}
	register(r.it, m)
	r.m = m
	r.it.Annotate(slog.Bool("token_refreshed_after_refusal", true))
	return nil
}
