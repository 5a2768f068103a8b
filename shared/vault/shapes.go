package vault

import (
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/shared/oauth"
)

// errHeader ends the message of a token a header cannot carry.
const errHeader = "has characters a header cannot carry (space, control or non-ASCII)"

func (j *staticJSON) serverURL() string { return j.ServerURL }
func (j *oauthJSON) serverURL() string  { return j.ServerURL }
func (j *clientJSON) serverURL() string { return j.ServerURL }

// credential checks a static_bearer: a header-safe token.
func (j *staticJSON) credential() (Credential, error) {
	switch {
	case j.Token == "":
		return Credential{}, errors.New("no token")
	case !headerSafe(j.Token):
		return Credential{}, errors.New("the token " + errHeader)
	}
	return Credential{Type: TypeStaticBearer, Token: j.Token}, nil
}

// credential checks an mcp_oauth: a header-safe access token, and its
// refresh, lease and dead_grant blocks where present.
func (j *oauthJSON) credential() (Credential, error) {
	switch {
	case j.AccessToken == "":
		return Credential{}, errors.New("no access_token")
	case !headerSafe(j.AccessToken):
		return Credential{}, errors.New("the access_token " + errHeader)
	}
	c := Credential{Type: TypeMCPOAuth, Token: j.AccessToken}
	var err error
	if c.ExpiresAt, err = parseTime(j.ExpiresAt); err != nil {
		return Credential{}, fmt.Errorf("expires_at: %w", err)
	}
	if j.Refresh != nil {
		if c.Refresh, err = j.Refresh.refresh(); err != nil {
			return Credential{}, fmt.Errorf("refresh: %w", err)
		}
	}
	if l := j.RefreshLease; l != nil {
		t, err := parseTime(l.ExpiresAt)
		if err != nil || t.IsZero() || l.Holder == "" {
			return Credential{}, errors.New("refresh_lease: want holder and expires_at")
		}
		c.Lease = &Lease{Holder: l.Holder, ExpiresAt: t}
	}
	if j.DeadGrant != nil {
		if c.Dead, err = parseDead(j.DeadGrant); err != nil {
			return Credential{}, fmt.Errorf("dead_grant: %w", err)
		}
	}
	return c, nil
}

// refresh checks a refresh block: endpoint, client id, refresh token, and
// a client secret exactly when the endpoint auth takes one.
func (r *refreshJSON) refresh() (*Refresh, error) {
	switch {
	case r.TokenEndpoint == "":
		return nil, errors.New("no token_endpoint")
	case !usableURL(r.TokenEndpoint):
		return nil, errors.New("token_endpoint is not an absolute http(s) URL without user info")
	case r.ClientID == "":
		return nil, errors.New("no client_id")
	case r.RefreshToken == "":
		return nil, errors.New("no refresh_token")
	}
	out := &Refresh{TokenEndpoint: r.TokenEndpoint, ClientID: r.ClientID, RefreshToken: r.RefreshToken,
		Scope: r.Scope, Resource: r.Resource, Auth: EndpointAuth{Type: oauth.AuthNone}}
	a := r.TokenEndpointAuth
	if a == nil {
		return out, nil
	}
	out.Auth = EndpointAuth{Type: a.Type, ClientSecret: str(a.ClientSecret)}
	switch a.Type {
	case oauth.AuthNone:
		if a.ClientSecret != nil {
			return nil, errors.New("token_endpoint_auth: type none takes no client_secret")
		}
	case oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost:
		if out.Auth.ClientSecret == "" {
			return nil, errors.New("token_endpoint_auth: no client_secret")
		}
	default:
		return nil, errors.New("token_endpoint_auth: type must be none, client_secret_basic or client_secret_post")
	}
	return out, nil
}

// credential checks an oauth_client_credentials: a client id, a usable
// token endpoint if given, and a secret unless it signs with a key.
func (j *clientJSON) credential() (Credential, error) {
	cl := &Client{ClientID: j.ClientID, ClientSecret: j.ClientSecret, Scope: j.Scope, Resource: j.Resource, TokenEndpoint: j.TokenEndpoint}
	switch {
	case cl.ClientID == "":
		return Credential{}, errors.New("no client_id")
	case cl.TokenEndpoint != "" && !usableURL(cl.TokenEndpoint):
		return Credential{}, errors.New("token_endpoint is not an absolute http(s) URL without user info")
	}
	method := ""
	if a := j.TokenEndpointAuth; a != nil {
		cl.Auth = &EndpointAuth{Type: a.Type, PrivateKey: str(a.PrivateKey), KeyID: str(a.KeyID)}
		method = a.Type
		if err := a.check(); err != nil {
			return Credential{}, fmt.Errorf("token_endpoint_auth: %w", err)
		}
	}
	if method != oauth.AuthPrivateKeyJWT && cl.ClientSecret == "" {
		return Credential{}, errors.New("no client_secret")
	}
	return Credential{Type: TypeClientCredentials, Client: cl}, nil
}

// check refuses a key where a secret is used, and a key that does not parse.
func (a *keyAuthJSON) check() error {
	switch a.Type {
	case oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost:
		if a.PrivateKey != nil || a.KeyID != nil {
			return errors.New("private_key and key_id belong to private_key_jwt")
		}
	case oauth.AuthPrivateKeyJWT:
		if _, err := oauth.ParsePrivateKey(str(a.PrivateKey)); err != nil {
			return fmt.Errorf("private_key: %w", err)
		}
	default:
		return errors.New("type must be client_secret_basic, client_secret_post or private_key_jwt")
	}
	return nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
