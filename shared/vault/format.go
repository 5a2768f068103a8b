package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/oauth"
)

// Credential types (the "type" field; absent means TypeStaticBearer).
const (
	TypeStaticBearer      = "static_bearer"
	TypeMCPOAuth          = "mcp_oauth"
	TypeClientCredentials = "oauth_client_credentials"
)

// Credential is one credential of a vault, ServerURL normalised. Printing,
// logging or marshaling a Credential redacts every secret.
//   - static_bearer: Token.
//   - mcp_oauth: Token is the access_token, ExpiresAt its expires_at (zero:
//     unknown), Refresh the refresh block (nil: none), Lease a refresh in
//     progress and Dead a refused grant (both written by mcpfn).
//   - oauth_client_credentials: Client.
type Credential struct {
	Type      string
	ServerURL string
	Token     string
	ExpiresAt time.Time
	Refresh   *Refresh
	Lease     *Lease
	Dead      *DeadGrant
	Client    *Client
}

// Refresh is an mcp_oauth credential's refresh block.
type Refresh struct {
	TokenEndpoint string
	ClientID      string
	RefreshToken  string
	Scope         string
	Resource      string
	Auth          EndpointAuth // Type "none" when the block has no token_endpoint_auth
}

// EndpointAuth is a token_endpoint_auth block. ClientSecret belongs to
// mcp_oauth's block; PrivateKey and KeyID to oauth_client_credentials'.
type EndpointAuth struct {
	Type         string
	ClientSecret string
	PrivateKey   string
	KeyID        string
}

// Client is an oauth_client_credentials credential's client. Auth nil
// means no token_endpoint_auth block: the first of client_secret_basic and
// client_secret_post the authorization server lists, else
// client_secret_basic.
type Client struct {
	ClientID      string
	ClientSecret  string
	Scope         string
	Resource      string
	TokenEndpoint string
	Auth          *EndpointAuth
}

// Lease marks an mcp_oauth refresh in progress: Holder may spend the
// refresh token until ExpiresAt.
type Lease struct {
	Holder    string
	ExpiresAt time.Time
}

// The JSON shapes, exactly as stored. Every field is a pointer so absence
// is seen; names are checked case for case by checkKeys first.
type (
	jsonDoc struct {
		Credentials *[]json.RawMessage `json:"credentials"`
	}
	jsonCred struct {
		Type              *string    `json:"type,omitempty"`
		ServerURL         *string    `json:"server_url,omitempty"`
		Token             *string    `json:"token,omitempty"`
		AccessToken       *string    `json:"access_token,omitempty"`
		ExpiresAt         *string    `json:"expires_at,omitempty"`
		Refresh           *jsonRef   `json:"refresh,omitempty"`
		RefreshLease      *jsonLease `json:"refresh_lease,omitempty"`
		DeadGrant         *jsonDead  `json:"dead_grant,omitempty"`
		ClientID          *string    `json:"client_id,omitempty"`
		ClientSecret      *string    `json:"client_secret,omitempty"`
		Scope             *string    `json:"scope,omitempty"`
		Resource          *string    `json:"resource,omitempty"`
		TokenEndpoint     *string    `json:"token_endpoint,omitempty"`
		TokenEndpointAuth *jsonAuth  `json:"token_endpoint_auth,omitempty"`
	}
	jsonRef struct {
		TokenEndpoint     *string   `json:"token_endpoint,omitempty"`
		ClientID          *string   `json:"client_id,omitempty"`
		RefreshToken      *string   `json:"refresh_token,omitempty"`
		Scope             *string   `json:"scope,omitempty"`
		Resource          *string   `json:"resource,omitempty"`
		TokenEndpointAuth *jsonAuth `json:"token_endpoint_auth,omitempty"`
	}
	jsonAuth struct {
		Type         *string `json:"type,omitempty"`
		ClientSecret *string `json:"client_secret,omitempty"`
		PrivateKey   *string `json:"private_key,omitempty"`
		KeyID        *string `json:"key_id,omitempty"`
	}
	jsonDead struct {
		Error              *string `json:"error,omitempty"`
		At                 *string `json:"at,omitempty"`
		RefreshTokenSHA256 *string `json:"refresh_token_sha256,omitempty"`
	}
	jsonLease struct {
		Holder    *string `json:"holder,omitempty"`
		ExpiresAt *string `json:"expires_at,omitempty"`
	}
)

// schema lists an object's field names; a non-nil value is a nested object's.
type schema map[string]schema

var (
	docSchema    = schema{"credentials": nil}
	staticSchema = schema{"type": nil, "server_url": nil, "token": nil}
	oauthSchema  = schema{"type": nil, "server_url": nil, "access_token": nil, "expires_at": nil,
		"refresh": {"token_endpoint": nil, "client_id": nil, "refresh_token": nil, "scope": nil, "resource": nil,
			"token_endpoint_auth": {"type": nil, "client_secret": nil}},
		"refresh_lease": {"holder": nil, "expires_at": nil},
		"dead_grant":    {"error": nil, "at": nil, "refresh_token_sha256": nil}}
	clientSchema = schema{"type": nil, "server_url": nil, "client_id": nil, "client_secret": nil, "scope": nil,
		"resource": nil, "token_endpoint": nil, "token_endpoint_auth": {"type": nil, "private_key": nil, "key_id": nil}}
)

// checkKeys refuses, in the object raw and the nested objects s names, a
// field s does not list (names compare case for case) or a field given
// twice. where prefixes the messages.
func checkKeys(raw []byte, s schema, where string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the typed decode reports it
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		sub, ok := s[k]
		if !ok {
			return fmt.Errorf("%w: %sunknown field %s (allowed: %s)", ErrVaultMalformed, where, quoteKey(k), strings.Join(keysOf(s), ", "))
		}
		if seen[k] {
			return fmt.Errorf("%w: %sfield %q given twice", ErrVaultMalformed, where, k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if sub != nil {
			if err := checkKeys(v, sub, where+k+": "); err != nil {
				return err
			}
		}
	}
	return nil
}

func keysOf(s schema) []string {
	ks := make([]string, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// quoteKey quotes a short plain field name; any other is not repeated.
func quoteKey(k string) string {
	if len(k) <= 32 && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
		return fmt.Sprintf("%q", k)
	}
	return "(name not shown)"
}

// decodeExact decodes raw into v after checkKeys: unknown fields and data
// after the value are refused.
func decodeExact(raw []byte, s schema, where string, v any) error {
	if err := checkKeys(raw, s, where); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s%s", ErrVaultMalformed, where, describe(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: %sdata after the JSON object", ErrVaultMalformed, where)
	}
	return nil
}

// parseDoc splits a vault's value into its raw credentials and parses them.
func parseDoc(data []byte) ([]json.RawMessage, []Credential, error) {
	if len(data) > MaxSecretBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrVaultMalformed, len(data), MaxSecretBytes)
	}
	var doc jsonDoc
	if err := decodeExact(data, docSchema, "", &doc); err != nil {
		return nil, nil, err
	}
	if doc.Credentials == nil {
		return nil, nil, fmt.Errorf("%w: no \"credentials\" array", ErrVaultMalformed)
	}
	creds := make([]Credential, 0, len(*doc.Credentials))
	for i, raw := range *doc.Credentials {
		c, err := parseCredential(raw, fmt.Sprintf("credential %d: ", i))
		if err != nil {
			return nil, nil, err
		}
		creds = append(creds, c)
	}
	return *doc.Credentials, creds, nil
}

func parseCredential(raw []byte, where string) (Credential, error) {
	var probe struct {
		Type *string `json:"type"`
	}
	_ = json.Unmarshal(raw, &probe) // a bad shape is reported by decodeExact
	typ := TypeStaticBearer
	if probe.Type != nil {
		typ = *probe.Type
	}
	var s schema
	switch typ {
	case TypeStaticBearer:
		s = staticSchema
	case TypeMCPOAuth:
		s = oauthSchema
	case TypeClientCredentials:
		s = clientSchema
	default:
		return Credential{}, fmt.Errorf("%w: %stype must be %s, %s or %s", ErrVaultMalformed, where, TypeStaticBearer, TypeMCPOAuth, TypeClientCredentials)
	}
	var j jsonCred
	if err := decodeExact(raw, s, where, &j); err != nil {
		return Credential{}, err
	}
	bad := func(format string, args ...any) (Credential, error) {
		return Credential{}, fmt.Errorf("%w: %s%s", ErrVaultMalformed, where, fmt.Sprintf(format, args...))
	}
	if j.ServerURL == nil || *j.ServerURL == "" {
		return bad("no server_url")
	}
	norm, err := NormalizeURL(*j.ServerURL)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %sserver_url: %w", ErrVaultMalformed, where, err)
	}
	c := Credential{Type: typ, ServerURL: norm}
	switch typ {
	case TypeStaticBearer:
		if str(j.Token) == "" {
			return bad("no token")
		}
		if !headerSafe(*j.Token) {
			return bad("the token has characters a header cannot carry (space, control or non-ASCII)")
		}
		c.Token = *j.Token
	case TypeMCPOAuth:
		if str(j.AccessToken) == "" {
			return bad("no access_token")
		}
		if !headerSafe(*j.AccessToken) {
			return bad("the access_token has characters a header cannot carry (space, control or non-ASCII)")
		}
		c.Token = *j.AccessToken
		if c.ExpiresAt, err = parseTime(j.ExpiresAt); err != nil {
			return bad("expires_at: %v", err)
		}
		if r := j.Refresh; r != nil {
			c.Refresh = &Refresh{TokenEndpoint: str(r.TokenEndpoint), ClientID: str(r.ClientID), RefreshToken: str(r.RefreshToken),
				Scope: str(r.Scope), Resource: str(r.Resource), Auth: EndpointAuth{Type: oauth.AuthNone}}
			switch {
			case c.Refresh.TokenEndpoint == "":
				return bad("refresh: no token_endpoint")
			case !usableURL(c.Refresh.TokenEndpoint):
				return bad("refresh: token_endpoint is not an absolute http(s) URL without user info")
			case c.Refresh.ClientID == "":
				return bad("refresh: no client_id")
			case c.Refresh.RefreshToken == "":
				return bad("refresh: no refresh_token")
			}
			if a := r.TokenEndpointAuth; a != nil {
				c.Refresh.Auth = EndpointAuth{Type: str(a.Type), ClientSecret: str(a.ClientSecret)}
				switch c.Refresh.Auth.Type {
				case oauth.AuthNone:
					if a.ClientSecret != nil {
						return bad("refresh: token_endpoint_auth: type none takes no client_secret")
					}
				case oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost:
					if c.Refresh.Auth.ClientSecret == "" {
						return bad("refresh: token_endpoint_auth: no client_secret")
					}
				default:
					return bad("refresh: token_endpoint_auth: type must be none, client_secret_basic or client_secret_post")
				}
			}
		}
		if l := j.RefreshLease; l != nil {
			t, err := parseTime(l.ExpiresAt)
			if err != nil || t.IsZero() || str(l.Holder) == "" {
				return bad("refresh_lease: want holder and expires_at")
			}
			c.Lease = &Lease{Holder: *l.Holder, ExpiresAt: t}
		}
		if d := j.DeadGrant; d != nil {
			if c.Dead, err = parseDead(d); err != nil {
				return bad("dead_grant: %v", err)
			}
		}
	case TypeClientCredentials:
		c.Client = &Client{ClientID: str(j.ClientID), ClientSecret: str(j.ClientSecret), Scope: str(j.Scope),
			Resource: str(j.Resource), TokenEndpoint: str(j.TokenEndpoint)}
		if c.Client.ClientID == "" {
			return bad("no client_id")
		}
		if c.Client.TokenEndpoint != "" && !usableURL(c.Client.TokenEndpoint) {
			return bad("token_endpoint is not an absolute http(s) URL without user info")
		}
		method := ""
		if a := j.TokenEndpointAuth; a != nil {
			c.Client.Auth = &EndpointAuth{Type: str(a.Type), PrivateKey: str(a.PrivateKey), KeyID: str(a.KeyID)}
			method = c.Client.Auth.Type
			switch method {
			case oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost:
				if a.PrivateKey != nil || a.KeyID != nil {
					return bad("token_endpoint_auth: private_key and key_id belong to private_key_jwt")
				}
			case oauth.AuthPrivateKeyJWT:
				if _, err := oauth.ParsePrivateKey(c.Client.Auth.PrivateKey); err != nil {
					return bad("token_endpoint_auth: private_key: %v", err)
				}
			default:
				return bad("token_endpoint_auth: type must be client_secret_basic, client_secret_post or private_key_jwt")
			}
		}
		if method != oauth.AuthPrivateKeyJWT && c.Client.ClientSecret == "" {
			return bad("no client_secret")
		}
	}
	return c, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func parseTime(p *string) (time.Time, error) {
	if p == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, *p)
	if err != nil {
		return time.Time{}, errors.New("not an RFC 3339 time")
	}
	return t, nil
}

func usableURL(raw string) bool {
	_, err := guard.CheckURL(raw, true)
	return err == nil
}

// secrets lists every secret value c holds.
func (c Credential) secrets() []string {
	var out []string
	add := func(s ...string) {
		for _, v := range s {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	add(c.Token)
	if r := c.Refresh; r != nil {
		add(r.RefreshToken, r.Auth.ClientSecret)
		if r.Auth.ClientSecret != "" {
			add(oauth.BasicCredentials(r.ClientID, r.Auth.ClientSecret))
		}
	}
	if cl := c.Client; cl != nil {
		add(cl.ClientSecret)
		if cl.ClientSecret != "" {
			add(oauth.BasicCredentials(cl.ClientID, cl.ClientSecret))
		}
		if cl.Auth != nil {
			add(cl.Auth.PrivateKey)
		}
	}
	return out
}

func (c Credential) String() string {
	typ := c.Type
	if typ == "" {
		typ = TypeStaticBearer
	}
	return fmt.Sprintf("{Type:%s ServerURL:%s Token:%s}", typ, redactURL(c.ServerURL), redactToken(c.Token))
}

// Format prints String for every verb, so no verb reaches a secret.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue redacts the secrets.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("type", c.Type), slog.String("server_url", redactURL(c.ServerURL)), slog.String("token", redactToken(c.Token)))
}

// MarshalJSON redacts the secrets.
func (c Credential) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type      string `json:"type,omitempty"`
		ServerURL string `json:"server_url"`
		Token     string `json:"token"`
	}{c.Type, redactURL(c.ServerURL), redactToken(c.Token)})
}
