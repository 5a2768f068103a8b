package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/shared/text"
)

// Limits on what Lookup accepts.
const (
	MaxVaults      = 20       // vault ids per lookup
	MaxVaultIDLen  = 256      // bytes of one vault id
	MaxSecretBytes = 64 << 10 // a secret's value (the Secrets Manager maximum)
	maxSecretName  = 512      // Secrets Manager's limit on prefix + id
	maxQuotedID    = 64       // bytes of a refused vault id an error quotes
)

// Sentinels. ErrBadVaultID, ErrVaultNotFound and ErrVaultMalformed (and
// ErrBadURL) describe the request or the operator's vault, not a failure to
// retry; any other Lookup error is a dependency failure.
var (
	ErrBadVaultID     = errors.New("vault: bad vault id")
	ErrVaultNotFound  = errors.New("vault: not found")
	ErrVaultMalformed = errors.New("vault: malformed")
	// ErrOAuthDisabled: an OAuth credential matched a Resolver built
	// without WithOAuth (internal_error: a deployment fault).
	ErrOAuthDisabled = errors.New("vault: OAuth credentials are not enabled")
	// ErrNotRefreshable: Refresh of a static_bearer match.
	ErrNotRefreshable = errors.New("vault: the credential cannot be refreshed")
)

// SecretsAPI is the part of *secretsmanager.Client a Resolver reads with.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsAPI = (*secretsmanager.Client)(nil)

// Resolver finds credentials in the vaults named <prefix><vault id>. It reads
// the secrets on every Lookup (no cache, but for client-credentials tokens)
// and is safe for concurrent use.
type Resolver struct {
	api    SecretsAPI
	prefix string
	oauth  *oauthState // nil without WithOAuth
}

// Option configures a Resolver.
type Option func(*Resolver)

// NewResolver returns a Resolver reading secrets through api. Without
// WithOAuth, a matching OAuth credential is an error wrapping
// ErrOAuthDisabled.
func NewResolver(api SecretsAPI, prefix string, opts ...Option) *Resolver {
	r := &Resolver{api: api, prefix: prefix}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Match is the outcome of a Lookup. Found reports a credential; VaultID,
// Type, ServerURL (as given to Lookup) and Token, the bearer token to send,
// are then set. Secrets lists every secret value the lookup read or
// obtained (tokens old and new, client secret and its Basic form): register
// each with the scrubber. Hints describe near misses (same origin, other
// path or query) without secrets. Printing, logging or marshaling a Match
// redacts Token and omits Secrets.
type Match struct {
	Found     bool
	VaultID   string
	Type      string
	ServerURL string
	Token     string
	Secrets   []string
	Hints     []string
}

// Lookup returns the first credential, vaults in the order given and
// credentials in the order stored, whose NormalizeURL form equals serverURL's.
// No match is Found false (connect anonymously). Vaults after the matching
// one are not read. An mcp_oauth token expiring within RefreshMargin is
// refreshed first, and a client-credentials token obtained or taken from
// the cache (see DESIGN.md). Errors wrap ErrBadVaultID, ErrBadURL,
// ErrVaultNotFound or ErrVaultMalformed; ErrOAuthDisabled; oauth.ErrRefused,
// ErrUnavailable, ErrProtocol or ErrDenied; or are Secrets Manager failures.
func (r *Resolver) Lookup(ctx context.Context, vaultIDs []string, serverURL string) (Match, error) {
	if len(vaultIDs) > MaxVaults {
		return Match{}, fmt.Errorf("%w: %d vault ids, at most %d", ErrBadVaultID, len(vaultIDs), MaxVaults)
	}
	for _, id := range vaultIDs {
		if err := r.validate(id); err != nil {
			return Match{}, err
		}
	}
	want, err := NormalizeURL(serverURL)
	if err != nil {
		return Match{}, err
	}
	wantOrigin, wantPath, wantQuery := parts(want)
	var hints []string
	seen := make(map[string]bool, len(vaultIDs))
	for _, id := range vaultIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		snap, err := r.read(ctx, id)
		if err != nil {
			return Match{}, err
		}
		for _, c := range snap.creds {
			if c.ServerURL == want {
				m, err := r.resolve(ctx, id, serverURL, c, snap)
				if err != nil {
					return Match{}, err
				}
				m.Hints = hints
				return m, nil
			}
			origin, path, query := parts(c.ServerURL)
			switch {
			case origin != wantOrigin:
			case path != wantPath:
				hints = append(hints, fmt.Sprintf("vault %s has a credential for the same origin but a different path", id)) // a path may carry a key
			case query != wantQuery:
				hints = append(hints, fmt.Sprintf("vault %s has a credential for the same origin and path but a different query", id))
			}
		}
	}
	return Match{Hints: hints}, nil
}

// resolve turns the matching credential c of vault id into a Match.
func (r *Resolver) resolve(ctx context.Context, id, serverURL string, c Credential, snap *snapshot) (Match, error) {
	if c.Type == TypeStaticBearer {
		return Match{Found: true, VaultID: id, Type: c.Type, ServerURL: serverURL, Token: c.Token, Secrets: []string{c.Token}}, nil
	}
	if r.oauth == nil {
		return Match{}, fmt.Errorf("%w: vault %s has a %s credential for %s", ErrOAuthDisabled, id, c.Type, originOf(c.ServerURL))
	}
	if c.Type == TypeMCPOAuth {
		return r.oauthToken(ctx, id, serverURL, "", snap)
	}
	return r.clientToken(ctx, id, serverURL, c, "")
}

// ValidateVaultID reports whether id can name a vault: 1 to MaxVaultIDLen
// bytes of ASCII letters, digits and _+=.@- (Secrets Manager's name
// characters without the path separator). Errors wrap ErrBadVaultID.
func ValidateVaultID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrBadVaultID)
	}
	if len(id) > MaxVaultIDLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadVaultID, len(id), MaxVaultIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+=.@-", c) >= 0) {
			return fmt.Errorf("%w: %q has character %q at byte %d", ErrBadVaultID, text.Truncate(id, maxQuotedID), c, i)
		}
	}
	return nil
}

func (r *Resolver) validate(id string) error {
	if err := ValidateVaultID(id); err != nil {
		return err
	}
	if len(r.prefix)+len(id) > maxSecretName {
		return fmt.Errorf("%w: %q makes a secret name longer than %d bytes", ErrBadVaultID, text.Truncate(id, maxQuotedID), maxSecretName)
	}
	return nil
}

// Credentials reads and parses one vault. Errors wrap ErrBadVaultID,
// ErrVaultNotFound (no such secret, or one scheduled for deletion) or
// ErrVaultMalformed, or are Secrets Manager failures.
func (r *Resolver) Credentials(ctx context.Context, vaultID string) ([]Credential, error) {
	snap, err := r.read(ctx, vaultID)
	if err != nil {
		return nil, err
	}
	return snap.creds, nil
}

// snapshot is one version of a vault: its id, raw credentials and parsed
// credentials, index for index.
type snapshot struct {
	version string
	raws    []json.RawMessage
	creds   []Credential
}

// find returns the index of the first credential for server (normalised),
// or -1.
func (s *snapshot) find(server string) int {
	for i, c := range s.creds {
		if c.ServerURL == server {
			return i
		}
	}
	return -1
}

func (r *Resolver) read(ctx context.Context, vaultID string) (*snapshot, error) {
	if err := r.validate(vaultID); err != nil {
		return nil, err
	}
	name := r.prefix + vaultID
	// AWSCURRENT named explicitly: moto answers a request without a stage
	// from the version last put, even after UpdateSecretVersionStage.
	out, err := r.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		var notFound *types.ResourceNotFoundException
		var invalid *types.InvalidRequestException
		if errors.As(err, &notFound) || errors.As(err, &invalid) {
			return nil, fmt.Errorf("%w: vault %s (secret %s)", ErrVaultNotFound, vaultID, name)
		}
		return nil, fmt.Errorf("vault: read vault %s (secret %s): %w", vaultID, name, err)
	}
	var data []byte
	switch {
	case out.SecretString != nil:
		data = []byte(*out.SecretString)
	case out.SecretBinary != nil:
		data = out.SecretBinary
	default:
		return nil, fmt.Errorf("%w: vault %s: the secret has no value", ErrVaultMalformed, vaultID)
	}
	raws, creds, err := parseDoc(data)
	if err != nil {
		return nil, fmt.Errorf("vault %s: %w", vaultID, err)
	}
	return &snapshot{version: aws.ToString(out.VersionId), raws: raws, creds: creds}, nil
}

// Parse decodes a vault's JSON (format: package doc) into credentials whose
// ServerURL is normalised. Field names match case for case; unknown or
// repeated fields and trailing data are refused. Errors wrap
// ErrVaultMalformed and never quote the secret.
func Parse(data []byte) ([]Credential, error) {
	_, creds, err := parseDoc(data)
	return creds, err
}

// headerSafe reports whether a token is visible ASCII without spaces.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (m Match) String() string {
	return fmt.Sprintf("{Found:%t VaultID:%s Type:%s Token:%s Hints:%q}", m.Found, m.VaultID, m.Type, redactToken(m.Token), m.Hints)
}

// Format prints String for every verb, so no verb reaches the token.
func (m Match) Format(f fmt.State, _ rune) { io.WriteString(f, m.String()) }

// LogValue redacts the token.
func (m Match) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("found", m.Found),
		slog.String("vault_id", m.VaultID),
		slog.String("type", m.Type),
		slog.String("token", redactToken(m.Token)),
		slog.Any("hints", m.Hints),
	)
}

// MarshalJSON redacts the token.
func (m Match) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Found   bool     `json:"found"`
		VaultID string   `json:"vault_id,omitempty"`
		Type    string   `json:"type,omitempty"`
		Token   string   `json:"token,omitempty"`
		Hints   []string `json:"hints,omitempty"`
	}{m.Found, m.VaultID, m.Type, redactToken(m.Token), m.Hints})
}

func redactToken(t string) string {
	if t == "" {
		return ""
	}
	return text.Redacted
}
