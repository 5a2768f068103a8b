package vault

import (
	"bytes"
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
)

// SecretsAPI is the part of *secretsmanager.Client a Resolver uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsAPI = (*secretsmanager.Client)(nil)

// Resolver finds credentials in the vaults named <prefix><vault id>. It reads
// the secrets on every Lookup (no cache) and is safe for concurrent use.
type Resolver struct {
	api    SecretsAPI
	prefix string
}

// NewResolver returns a Resolver reading secrets through api.
func NewResolver(api SecretsAPI, prefix string) *Resolver {
	return &Resolver{api: api, prefix: prefix}
}

// Match is the outcome of a Lookup. Found reports a credential; VaultID and
// Token are then set. Hints describe near misses (same origin, other path or
// query) without tokens. Printing, logging or marshaling a Match redacts the
// token.
type Match struct {
	Found   bool
	VaultID string
	Token   string
	Hints   []string
}

// Lookup returns the first credential, vaults in the order given and
// credentials in the order stored, whose NormalizeURL form equals serverURL's.
// No match is Found false (connect anonymously). Vaults after the matching
// one are not read. Errors wrap ErrBadVaultID, ErrBadURL, ErrVaultNotFound or
// ErrVaultMalformed, or are Secrets Manager failures.
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
	var m Match
	seen := make(map[string]bool, len(vaultIDs))
	for _, id := range vaultIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		creds, err := r.Credentials(ctx, id)
		if err != nil {
			return Match{}, err
		}
		for _, c := range creds {
			if c.ServerURL == want {
				m.Found, m.VaultID, m.Token = true, id, c.Token
				return m, nil
			}
			origin, path, query := parts(c.ServerURL)
			switch {
			case origin != wantOrigin:
			case path != wantPath:
				m.Hints = append(m.Hints, fmt.Sprintf("vault %s has a credential for the same origin but path %s", id, path))
			case query != wantQuery:
				m.Hints = append(m.Hints, fmt.Sprintf("vault %s has a credential for the same origin and path but a different query", id))
			}
		}
	}
	return m, nil
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
	if err := r.validate(vaultID); err != nil {
		return nil, err
	}
	name := r.prefix + vaultID
	out, err := r.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
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
	creds, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("vault %s: %w", vaultID, err)
	}
	return creds, nil
}

// Parse decodes a vault's JSON (format: package doc) into credentials whose
// ServerURL is normalised. Errors wrap ErrVaultMalformed and never quote the
// secret.
func Parse(data []byte) ([]Credential, error) {
	if len(data) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrVaultMalformed, len(data), MaxSecretBytes)
	}
	var doc struct {
		Credentials *[]struct {
			ServerURL *string `json:"server_url"`
			Token     *string `json:"token"`
		} `json:"credentials"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrVaultMalformed, describe(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrVaultMalformed)
	}
	if doc.Credentials == nil {
		return nil, fmt.Errorf("%w: no \"credentials\" array", ErrVaultMalformed)
	}
	creds := make([]Credential, 0, len(*doc.Credentials))
	for i, c := range *doc.Credentials {
		if c.ServerURL == nil || *c.ServerURL == "" {
			return nil, fmt.Errorf("%w: credential %d: no server_url", ErrVaultMalformed, i)
		}
		norm, err := NormalizeURL(*c.ServerURL)
		if err != nil {
			return nil, fmt.Errorf("%w: credential %d: server_url: %w", ErrVaultMalformed, i, err)
		}
		if c.Token == nil || *c.Token == "" {
			return nil, fmt.Errorf("%w: credential %d: no token", ErrVaultMalformed, i)
		}
		if !headerSafe(*c.Token) {
			return nil, fmt.Errorf("%w: credential %d: the token has characters a header cannot carry (space, control or non-ASCII)", ErrVaultMalformed, i)
		}
		creds = append(creds, Credential{ServerURL: norm, Token: *c.Token})
	}
	return creds, nil
}

// describe names a JSON decoding failure without quoting the input.
func describe(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON (syntax error at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q is %s, want %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "empty or incomplete JSON"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return "unknown field (allowed: credentials, server_url, token)"
	default:
		return "not a credentials object"
	}
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

// Credential is one server URL (normalised) and its bearer token. Printing,
// logging or marshaling a Credential redacts the token.
type Credential struct {
	ServerURL string
	Token     string
}

func (c Credential) String() string {
	return fmt.Sprintf("{ServerURL:%s Token:%s}", redactURL(c.ServerURL), redactToken(c.Token))
}

// Format prints String for every verb, so no verb reaches the token.
func (c Credential) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// LogValue redacts the token.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("server_url", redactURL(c.ServerURL)), slog.String("token", redactToken(c.Token)))
}

// MarshalJSON redacts the token.
func (c Credential) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ServerURL string `json:"server_url"`
		Token     string `json:"token"`
	}{redactURL(c.ServerURL), redactToken(c.Token)})
}

func (m Match) String() string {
	return fmt.Sprintf("{Found:%t VaultID:%s Token:%s Hints:%q}", m.Found, m.VaultID, redactToken(m.Token), m.Hints)
}

// Format prints String for every verb, so no verb reaches the token.
func (m Match) Format(f fmt.State, _ rune) { io.WriteString(f, m.String()) }

// LogValue redacts the token.
func (m Match) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("found", m.Found),
		slog.String("vault_id", m.VaultID),
		slog.String("token", redactToken(m.Token)),
		slog.Any("hints", m.Hints),
	)
}

// MarshalJSON redacts the token.
func (m Match) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Found   bool     `json:"found"`
		VaultID string   `json:"vault_id,omitempty"`
		Token   string   `json:"token,omitempty"`
		Hints   []string `json:"hints,omitempty"`
	}{m.Found, m.VaultID, redactToken(m.Token), m.Hints})
}

func redactToken(t string) string {
	if t == "" {
		return ""
	}
	return text.Redacted
}
