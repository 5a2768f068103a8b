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
	j := jsonCred{ServerURL: ptr(c.ServerURL)}
	switch c.Type {
	case TypeStaticBearer, "":
		j.Token = ptr(c.Token)
	case TypeMCPOAuth:
		j.Type, j.AccessToken, j.ExpiresAt = ptr(c.Type), ptr(c.Token), timePtr(c.ExpiresAt)
		if r := c.Refresh; r != nil {
			j.Refresh = &jsonRef{TokenEndpoint: ptr(r.TokenEndpoint), ClientID: ptr(r.ClientID), RefreshToken: ptr(r.RefreshToken),
				Scope: ptr(r.Scope), Resource: ptr(r.Resource)}
			if r.Auth.Type != "" && r.Auth.Type != oauth.AuthNone || r.Auth.ClientSecret != "" {
				j.Refresh.TokenEndpointAuth = &jsonAuth{Type: ptr(r.Auth.Type), ClientSecret: ptr(r.Auth.ClientSecret)}
			}
		}
		if l := c.Lease; l != nil {
			j.RefreshLease = &jsonLease{Holder: ptr(l.Holder), ExpiresAt: timePtr(l.ExpiresAt)}
		}
		if d := c.Dead; d != nil {
			j.DeadGrant = &jsonDead{Error: ptr(d.Error), At: timePtr(d.At), RefreshTokenSHA256: ptr(d.RefreshTokenSHA256)}
		}
	case TypeClientCredentials:
		j.Type = ptr(c.Type)
		if cl := c.Client; cl != nil {
			j.ClientID, j.ClientSecret, j.Scope, j.Resource, j.TokenEndpoint = ptr(cl.ClientID), ptr(cl.ClientSecret), ptr(cl.Scope), ptr(cl.Resource), ptr(cl.TokenEndpoint)
			if a := cl.Auth; a != nil {
				j.TokenEndpointAuth = &jsonAuth{Type: ptr(a.Type), PrivateKey: ptr(a.PrivateKey), KeyID: ptr(a.KeyID)}
			}
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return b
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
	b, err := json.Marshal(jsonDoc{Credentials: &raws})
	if err != nil {
		panic(err) // valid raw JSON only: cannot fail
	}
	return b
}
