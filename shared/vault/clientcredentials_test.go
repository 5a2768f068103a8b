package vault_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"

	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

func TestClientCredentials(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	for _, tt := range []struct {
		name        string
		advertised  []string
		auth        *vault.EndpointAuth
		noSecret    bool
		explicitURL bool
		want        string
	}{
		{"discovered, default method", nil, nil, false, false, oauth.AuthClientSecretBasic},
		{"discovered, first advertised method", []string{"private_key_jwt", "client_secret_post", "client_secret_basic"}, nil, false, false, oauth.AuthClientSecretPost},
		{"discovered, nothing usable advertised", []string{"tls_client_auth"}, nil, false, false, oauth.AuthClientSecretBasic},
		{"client_secret_basic", nil, &vault.EndpointAuth{Type: oauth.AuthClientSecretBasic}, false, false, oauth.AuthClientSecretBasic},
		{"client_secret_post", nil, &vault.EndpointAuth{Type: oauth.AuthClientSecretPost}, false, false, oauth.AuthClientSecretPost},
		{"private_key_jwt", nil, &vault.EndpointAuth{Type: oauth.AuthPrivateKeyJWT, PrivateKey: keyPEM, KeyID: "k1"}, true, false, oauth.AuthPrivateKeyJWT},
		{"token_endpoint given", nil, nil, false, true, oauth.AuthClientSecretBasic},
	} {
		t.Run(tt.name, func(t *testing.T) {
			as := oauthtest.NewServer(t, oauthtest.Options{PublicKey: key.Public(), AuthMethods: tt.advertised})
			res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Scope: "mcp:tools"})
			cl := &vault.Client{ClientID: as.Options.ClientID, ClientSecret: as.Options.ClientSecret, Resource: res.URL, Auth: tt.auth}
			if tt.noSecret {
				cl.ClientSecret = ""
			}
			if tt.explicitURL {
				cl.TokenEndpoint = as.TokenURL
			}
			api, prefix := fakeVault("team", vault.Credential{Type: vault.TypeClientCredentials, ServerURL: res.URL, Client: cl})
			r := resolver(api, prefix, policyFor(t, as.AllowEntry(), res.AllowEntry()), nil)
			m, err := r.Lookup(t.Context(), []string{"team"}, res.URL)
			if err != nil {
				t.Fatal(err)
			}
			if code := get(t, res.URL, m.Token); code != http.StatusOK {
				t.Errorf("resource answered %d to the token, want 200", code)
			}
			reqs := as.TokenRequests()
			if len(reqs) != 1 || reqs[0].AuthMethod != tt.want || reqs[0].GrantType != "client_credentials" || reqs[0].Resource != res.URL {
				t.Fatalf("token requests %+v; want one client_credentials request with %s and the resource", reqs, tt.want)
			}
			if !tt.explicitURL && reqs[0].Scope != "mcp:tools" {
				t.Errorf("scope %q, want the challenge's", reqs[0].Scope)
			}
			wantChallenges := 2 // discovery, then the test's own request with no token
			if tt.explicitURL {
				wantChallenges = 1
			}
			_ = get(t, res.URL, "")
			if got := res.Challenges(); got != wantChallenges {
				t.Errorf("%d challenges, want %d", got, wantChallenges)
			}
			// A second Lookup is a cache hit: no request at all.
			hits := as.Hits()
			m2, err := r.Lookup(t.Context(), []string{"team"}, res.URL)
			if err != nil || m2.Token != m.Token {
				t.Fatalf("second Lookup = %v, %v; want the cached token", m2, err)
			}
			if as.Hits() != hits || res.Challenges() != wantChallenges {
				t.Errorf("the second Lookup made requests")
			}
			// A refused token is fetched anew, once.
			m3, err := r.Refresh(t.Context(), m)
			if err != nil || m3.Token == m.Token {
				t.Fatalf("Refresh = %v, %v; want a new token", m3, err)
			}
			if n := len(as.TokenRequests()); n != 2 {
				t.Errorf("%d token requests after Refresh, want 2", n)
			}
		})
	}
}
