package vault

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

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
