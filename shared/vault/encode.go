package vault

import (
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/shared/oauth"
)

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return ptr(t.UTC().Format(time.RFC3339))
}

// encode is c in the vault format, secrets included. ServerURL is written
// as given.
func encode(c Credential) json.RawMessage {
	var v any
	switch c.Type {
	case TypeStaticBearer, "":
		v = staticJSON{ServerURL: c.ServerURL, Token: c.Token}
	case TypeMCPOAuth:
		v = encodeOAuth(c)
	case TypeClientCredentials:
		j := clientJSON{Type: c.Type, ServerURL: c.ServerURL}
		if cl := c.Client; cl != nil {
			j.ClientID, j.ClientSecret, j.Scope, j.Resource, j.TokenEndpoint = cl.ClientID, cl.ClientSecret, cl.Scope, cl.Resource, cl.TokenEndpoint
			if a := cl.Auth; a != nil {
				j.TokenEndpointAuth = &keyAuthJSON{Type: a.Type, PrivateKey: ptr(a.PrivateKey), KeyID: ptr(a.KeyID)}
			}
		}
		v = j
	default:
		v = staticJSON{ServerURL: c.ServerURL}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return b
}

func encodeOAuth(c Credential) oauthJSON {
	j := oauthJSON{Type: c.Type, ServerURL: c.ServerURL, AccessToken: c.Token, ExpiresAt: timePtr(c.ExpiresAt)}
	if r := c.Refresh; r != nil {
		j.Refresh = &refreshJSON{TokenEndpoint: r.TokenEndpoint, ClientID: r.ClientID, RefreshToken: r.RefreshToken,
			Scope: r.Scope, Resource: r.Resource}
		if r.Auth.Type != "" && r.Auth.Type != oauth.AuthNone || r.Auth.ClientSecret != "" {
			j.Refresh.TokenEndpointAuth = &secretAuthJSON{Type: r.Auth.Type, ClientSecret: ptr(r.Auth.ClientSecret)}
		}
	}
	if l := c.Lease; l != nil {
		j.RefreshLease = &leaseJSON{Holder: l.Holder, ExpiresAt: timePtr(l.ExpiresAt)}
	}
	if d := c.Dead; d != nil {
		j.DeadGrant = &deadJSON{Error: d.Error, At: timePtr(d.At), RefreshTokenSHA256: d.RefreshTokenSHA256}
	}
	return j
}

// Encode returns the vault value holding creds, secrets included, in the
// format Parse reads: what an onboarding tool or a test writes.
func Encode(creds ...Credential) []byte {
	raws := make([]json.RawMessage, 0, len(creds))
	for _, c := range creds {
		raws = append(raws, encode(c))
	}
	return encodeDoc(raws)
}

// EncodeCredential returns one credential as stored in a vault's
// credentials array, secrets included.
func EncodeCredential(c Credential) json.RawMessage { return encode(c) }

func encodeDoc(raws []json.RawMessage) []byte {
	if raws == nil {
		raws = []json.RawMessage{}
	}
	b, err := json.Marshal(docJSON{Credentials: &raws})
	if err != nil {
		panic(err) // valid raw JSON only: cannot fail
	}
	return b
}
