package runner

import (
	"context"
	"errors"
	"log/slog"

	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Vaults finds a server's bearer token in vaults.
type Vaults interface {
	Lookup(ctx context.Context, vaultIDs []string, serverURL string) (vault.Match, error)
}

var _ Vaults = (*vault.Resolver)(nil)

// BearerToken returns the token of the first credential in vaultIDs for
// serverURL, or "" (connect anonymously) when none matches or vaultIDs is
// empty. It logs the lookup's hints to log, registers the token with
// it.AddSecret and notes which vault matched on the summary line. A vault
// id that is malformed, names no vault, or a vault that holds no usable
// credentials is wire.InvalidRequest; any other failure is wire.Internal.
func BearerToken(ctx context.Context, v Vaults, it *Item, vaultIDs []string, serverURL string, log *slog.Logger) (string, error) {
	if len(vaultIDs) == 0 {
		return "", nil
	}
	m, err := v.Lookup(ctx, vaultIDs, serverURL)
	switch {
	case errors.Is(err, vault.ErrBadVaultID), errors.Is(err, vault.ErrVaultNotFound),
		errors.Is(err, vault.ErrVaultMalformed), errors.Is(err, vault.ErrBadURL):
		return "", wire.Errorf(wire.InvalidRequest, err, "vault_ids")
	case err != nil:
		return "", wire.Errorf(wire.Internal, err, "the vault lookup failed")
	}
	for _, hint := range m.Hints {
		log.LogAttrs(ctx, slog.LevelWarn, "credential hint",
			slog.String("request_id", it.RequestID), slog.String("work_item", it.ID),
			slog.String("server", it.Server()), slog.String("hint", it.Scrub(hint)))
	}
	if !m.Found {
		it.Annotate(slog.String("credential", "none"))
		return "", nil
	}
	it.AddSecret(m.Token)
	it.Annotate(slog.String("credential", "vault:"+m.VaultID))
	return m.Token, nil
}
