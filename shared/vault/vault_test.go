package vault_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// static completes a found Match of a static_bearer credential for
// serverURL: its type, server URL and secrets.
func static(m vault.Match, serverURL string) vault.Match {
	if m.Found {
		m.Type, m.ServerURL, m.Secrets = vault.TypeStaticBearer, serverURL, []string{m.Token}
	}
	return m
}

// creds is the vault value holding url, token pairs.
func creds(pairs ...string) string {
	var cs []vault.Credential
	for i := 0; i+1 < len(pairs); i += 2 {
		cs = append(cs, vault.Credential{ServerURL: pairs[i], Token: pairs[i+1]})
	}
	return vaulttest.JSON(cs...)
}

// secretsOf is a vaulttest.Secrets holding values, name → secret string.
func secretsOf(values map[string]string) *vaulttest.Secrets {
	s := &vaulttest.Secrets{}
	for name, v := range values {
		s.Put(name, v)
	}
	return s
}

const server = "https://mcp.example.com/mcp"

func TestLookup(t *testing.T) {
	secrets := map[string]string{
		"mcpfn/team":     creds("https://other.example.com/mcp", "tok-other", "https://MCP.example.com:443/mcp", "tok-team", server, "tok-team-second"),
		"mcpfn/personal": creds(server, "tok-personal"),
		"mcpfn/near":     creds("https://mcp.example.com/mcp/", "tok-slash", "https://mcp.example.com/v2/mcp", "tok-v2"),
		"mcpfn/query":    creds("https://mcp.example.com/mcp?tenant=a", "tok-query"),
		"mcpfn/http":     creds("http://mcp.example.com/mcp", "tok-http"),
		"mcpfn/empty":    `{"credentials":[]}`,
	}
	tests := []struct {
		name      string
		vaults    []string
		server    string
		want      vault.Match
		wantAsked []string
	}{
		{
			name:      "no vaults",
			server:    server,
			want:      vault.Match{},
			wantAsked: nil,
		},
		{
			name:      "first credential in the first vault wins",
			vaults:    []string{"team", "personal"},
			server:    server,
			want:      vault.Match{Found: true, VaultID: "team", Token: "tok-team"},
			wantAsked: []string{"mcpfn/team"}, // vaults after the match are not read
		},
		{
			name:      "vault priority",
			vaults:    []string{"personal", "team"},
			server:    server,
			want:      vault.Match{Found: true, VaultID: "personal", Token: "tok-personal"},
			wantAsked: []string{"mcpfn/personal"},
		},
		{
			name:      "server URL normalised too",
			vaults:    []string{"personal"},
			server:    "HTTPS://mcp.EXAMPLE.com:443/mcp#x",
			want:      vault.Match{Found: true, VaultID: "personal", Token: "tok-personal"},
			wantAsked: []string{"mcpfn/personal"},
		},
		{
			name:   "no match is anonymous, with path hints",
			vaults: []string{"empty", "near", "http"},
			server: server,
			want: vault.Match{Hints: []string{
				"vault near has a credential for the same origin but a different path", // not the path: it may carry a key
				"vault near has a credential for the same origin but a different path",
			}}, // http://… is another origin: no hint
			wantAsked: []string{"mcpfn/empty", "mcpfn/near", "mcpfn/http"},
		},
		{
			name:   "hints from earlier vaults kept on a match",
			vaults: []string{"near", "personal"},
			server: server,
			want: vault.Match{Found: true, VaultID: "personal", Token: "tok-personal", Hints: []string{
				"vault near has a credential for the same origin but a different path", // not the path: it may carry a key
				"vault near has a credential for the same origin but a different path",
			}},
			wantAsked: []string{"mcpfn/near", "mcpfn/personal"},
		},
		{
			name:      "query is part of the match",
			vaults:    []string{"query"},
			server:    server,
			want:      vault.Match{Hints: []string{"vault query has a credential for the same origin and path but a different query"}},
			wantAsked: []string{"mcpfn/query"},
		},
		{
			name:      "query matches exactly",
			vaults:    []string{"query"},
			server:    "https://mcp.example.com/mcp?tenant=a",
			want:      vault.Match{Found: true, VaultID: "query", Token: "tok-query"},
			wantAsked: []string{"mcpfn/query"},
		},
		{
			name:      "duplicate vault ids read once",
			vaults:    []string{"empty", "empty", "http"},
			server:    server,
			want:      vault.Match{},
			wantAsked: []string{"mcpfn/empty", "mcpfn/http"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := secretsOf(secrets)
			got, err := vault.NewResolver(f, "mcpfn/").Lookup(t.Context(), tt.vaults, tt.server)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(static(tt.want, tt.server), got); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAsked, f.Asked()); diff != "" {
				t.Errorf("secrets read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	unavailable := errors.New("connection reset")
	f := secretsOf(map[string]string{
		"p-good":      creds(server, "tok-good"),
		"p-notjson":   `{"credentials": [ {"server_url": "https://mcp.example.com/mcp", "token": "tok-leak"`,
		"p-array":     `[{"server_url":"https://mcp.example.com/mcp","token":"tok-leak"}]`,
		"p-unknown":   `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":"tok-leak","tokne":"x"}]}`,
		"p-nocreds":   `{}`,
		"p-nourl":     `{"credentials":[{"token":"tok-leak"}]}`,
		"p-badurl":    `{"credentials":[{"server_url":"https://user:tok-leak@mcp.example.com/mcp","token":"t"}]}`,
		"p-notoken":   `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":""}]}`,
		"p-newline":   `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":"tok-leak\n"}]}`,
		"p-wrongtype": `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":12345}]}`,
		"p-trailing":  creds(server, "tok-leak") + `{}`,
	})
	f.Fail("p-down", unavailable)
	f.Fail("p-deleted", &types.InvalidRequestException{Message: aws.String("You can't perform this operation on the secret because it was marked for deletion.")})
	tests := []struct {
		name    string
		vaults  []string
		server  string
		want    error
		wantNot []error
	}{
		{"missing vault", []string{"good", "missing"}, "https://elsewhere.example.com/", vault.ErrVaultNotFound, nil},
		{"vault scheduled for deletion", []string{"deleted"}, server, vault.ErrVaultNotFound, nil},
		{"truncated JSON", []string{"notjson"}, server, vault.ErrVaultMalformed, nil},
		{"top-level array", []string{"array"}, server, vault.ErrVaultMalformed, nil},
		{"misspelt field", []string{"unknown"}, server, vault.ErrVaultMalformed, nil},
		{"no credentials field", []string{"nocreds"}, server, vault.ErrVaultMalformed, nil},
		{"credential without url", []string{"nourl"}, server, vault.ErrVaultMalformed, nil},
		{"credential url with user info", []string{"badurl"}, server, vault.ErrVaultMalformed, nil},
		{"empty token", []string{"notoken"}, server, vault.ErrVaultMalformed, nil},
		{"token with a newline", []string{"newline"}, server, vault.ErrVaultMalformed, nil},
		{"token not a string", []string{"wrongtype"}, server, vault.ErrVaultMalformed, nil},
		{"data after the object", []string{"trailing"}, server, vault.ErrVaultMalformed, nil},
		{"Secrets Manager down", []string{"down"}, server, unavailable,
			[]error{vault.ErrVaultNotFound, vault.ErrVaultMalformed, vault.ErrBadVaultID}},
		{"slash in vault id", []string{"good", "../other"}, server, vault.ErrBadVaultID, nil},
		{"empty vault id", []string{""}, server, vault.ErrBadVaultID, nil},
		{"space in vault id", []string{"a b"}, server, vault.ErrBadVaultID, nil},
		{"non-ASCII vault id", []string{"tëam"}, server, vault.ErrBadVaultID, nil},
		{"too many vaults", make([]string, vault.MaxVaults+1), server, vault.ErrBadVaultID, nil},
		{"vault id too long", []string{strings.Repeat("a", vault.MaxVaultIDLen+1)}, server, vault.ErrBadVaultID, nil},
		{"bad server URL", []string{"good"}, "ftp://mcp.example.com/", vault.ErrBadURL, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vault.NewResolver(f, "p-").Lookup(t.Context(), tt.vaults, tt.server)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Lookup = %v, %v; want %v", got, err, tt.want)
			}
			for _, not := range tt.wantNot {
				if errors.Is(err, not) {
					t.Errorf("error %v wraps %v", err, not)
				}
			}
			if strings.Contains(err.Error(), "tok-") {
				t.Errorf("error quotes the secret: %v", err)
			}
			if diff := cmp.Diff(vault.Match{}, got); diff != "" {
				t.Errorf("Match with an error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadVaultIDReadsNothing(t *testing.T) {
	f := secretsOf(map[string]string{"p-good": creds(server, "t")})
	_, err := vault.NewResolver(f, "p-").Lookup(t.Context(), []string{"good", "bad/id"}, server)
	if !errors.Is(err, vault.ErrBadVaultID) {
		t.Fatalf("Lookup: %v, want ErrBadVaultID", err)
	}
	if asked := f.Asked(); len(asked) != 0 {
		t.Errorf("secrets read before validation: %q", asked)
	}
}

func TestSecretBinary(t *testing.T) {
	f := &vaulttest.Secrets{}
	f.PutBinary("p-bin", []byte(creds(server, "tok-bin")))
	got, err := vault.NewResolver(f, "p-").Lookup(t.Context(), []string{"bin"}, server)
	if err != nil {
		t.Fatal(err)
	}
	if want := static(vault.Match{Found: true, VaultID: "bin", Token: "tok-bin"}, server); !cmp.Equal(want, got) {
		t.Errorf("Lookup = %v, want %v", got, want)
	}
}

func TestValidateVaultID(t *testing.T) {
	for _, id := range []string{"a", "team-1", "Team_1", "a.b", "a+b=c@d", strings.Repeat("x", vault.MaxVaultIDLen)} {
		if err := vault.ValidateVaultID(id); err != nil {
			t.Errorf("ValidateVaultID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "a/b", `a\b`, "a b", "a\x00", "a:b", "a%2Fb", "*", strings.Repeat("x", vault.MaxVaultIDLen+1)} {
		if err := vault.ValidateVaultID(id); !errors.Is(err, vault.ErrBadVaultID) {
			t.Errorf("ValidateVaultID(%q) = %v, want ErrBadVaultID", id, err)
		}
	}
}

func TestParse(t *testing.T) {
	got, err := vault.Parse([]byte(`{"credentials":[
		{"server_url":"HTTPS://A.example.com:443","token":"t1"},
		{"server_url":"http://b.example.com:8080/mcp/","token":"t2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []vault.Credential{
		{Type: vault.TypeStaticBearer, ServerURL: "https://a.example.com/", Token: "t1"},
		{Type: vault.TypeStaticBearer, ServerURL: "http://b.example.com:8080/mcp/", Token: "t2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if _, err := vault.Parse(bytes.Repeat([]byte(" "), vault.MaxSecretBytes+1)); !errors.Is(err, vault.ErrVaultMalformed) {
		t.Errorf("Parse of an oversized value: %v, want ErrVaultMalformed", err)
	}
}

// TestNoTokenInOutput is the canary: a Match or Credential printed, logged
// (alone or nested) or marshaled never shows its token.
func TestNoTokenInOutput(t *testing.T) {
	const token = "sk-canary-7f3a9c"
	m := vault.Match{Found: true, VaultID: "team", Token: token, Hints: []string{"vault x has a credential for the same origin but path /a"}}
	c := vault.Credential{ServerURL: "https://mcp.example.com/mcp?api_key=" + token, Token: token}

	var outputs []string
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("lookup", "match", m, "credential", c)
		log.Info("lookup", slog.Any("match", m), slog.Any("ptr", &m), slog.Any("nested", struct{ M vault.Match }{m}))
		log.Info("lookup", slog.Any("creds", []vault.Credential{c}), slog.Any("wrapped", map[string]any{"m": m, "c": c}))
		outputs = append(outputs, buf.String())
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outputs = append(outputs, fmt.Sprintf(verb, m), fmt.Sprintf(verb, &m), fmt.Sprintf(verb, c), fmt.Sprintf(verb, []vault.Credential{c}))
	}
	outputs = append(outputs, m.String(), c.String())
	for _, v := range []any{m, c, &m, []vault.Credential{c}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
	}
	hexToken := fmt.Sprintf("%x", token)
	for _, out := range outputs {
		if strings.Contains(out, token) || strings.Contains(out, hexToken) {
			t.Errorf("token in output: %s", out)
		}
	}
	// The useful parts are still there.
	if !strings.Contains(outputs[0], `"vault_id":"team"`) || !strings.Contains(outputs[0], "[redacted]") {
		t.Errorf("JSON log lacks the vault id or the redaction mark: %s", outputs[0])
	}
}

func TestParseOAuthShapes(t *testing.T) {
	key := `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgevZzL1gdAFr88hb2
OF/2NxApJCzGCEDdfSp6VQO30hyhRANCAAQRWz+jn65BtOMvdyHKcvjBeBSDZH2r
1RTwjmYSi9R/zpBnuQ4EiMnCqfMPWiZqB4QdbAd0E7oH50VpuZ1P087G
-----END PRIVATE KEY-----`
	keyJSON, _ := json.Marshal(key)
	good := `{"credentials":[
		{"type":"mcp_oauth","server_url":"https://mcp.example.com/mcp","access_token":"at","expires_at":"2026-12-01T12:00:00Z",
		 "refresh":{"token_endpoint":"https://auth.example.com/token","client_id":"c","refresh_token":"rt","scope":"s","resource":"https://mcp.example.com/mcp",
		            "token_endpoint_auth":{"type":"client_secret_post","client_secret":"cs"}}},
		{"type":"oauth_client_credentials","server_url":"https://m2m.example.com/mcp","client_id":"c2","client_secret":"cs2"},
		{"type":"oauth_client_credentials","server_url":"https://jwt.example.com/mcp","client_id":"c3",
		 "token_endpoint_auth":{"type":"private_key_jwt","private_key":` + string(keyJSON) + `,"key_id":"k1"}},
		{"type":"static_bearer","server_url":"https://static.example.com/","token":"t"}]}`
	got, err := vault.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []vault.Credential{
		{Type: vault.TypeMCPOAuth, ServerURL: "https://mcp.example.com/mcp", Token: "at", ExpiresAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
			Refresh: &vault.Refresh{TokenEndpoint: "https://auth.example.com/token", ClientID: "c", RefreshToken: "rt", Scope: "s", Resource: "https://mcp.example.com/mcp",
				Auth: vault.EndpointAuth{Type: "client_secret_post", ClientSecret: "cs"}}},
		{Type: vault.TypeClientCredentials, ServerURL: "https://m2m.example.com/mcp", Client: &vault.Client{ClientID: "c2", ClientSecret: "cs2"}},
		{Type: vault.TypeClientCredentials, ServerURL: "https://jwt.example.com/mcp", Client: &vault.Client{ClientID: "c3",
			Auth: &vault.EndpointAuth{Type: "private_key_jwt", PrivateKey: key, KeyID: "k1"}}},
		{Type: vault.TypeStaticBearer, ServerURL: "https://static.example.com/", Token: "t"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	// What Encode writes, Parse reads back the same.
	again, err := vault.Parse(vault.Encode(got...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("Parse(Encode) (-want +got):\n%s", diff)
	}

	const oauthCred = `"type":"mcp_oauth","server_url":"https://mcp.example.com/mcp","access_token":"at"`
	const refresh = `"token_endpoint":"https://auth.example.com/token","client_id":"c","refresh_token":"rt"`
	for _, tt := range []struct{ name, cred string }{
		{"unknown type", `{"type":"bearer","server_url":"https://a.example.com/","token":"t"}`},
		{"field in another case", `{"TYPE":"mcp_oauth","server_url":"https://mcp.example.com/mcp","access_token":"at"}`},
		{"nested field in another case", `{` + oauthCred + `,"refresh":{"Token_Endpoint":"https://auth.example.com/token","client_id":"c","refresh_token":"rt"}}`},
		{"field given twice", `{` + oauthCred + `,"access_token":"at2"}`},
		{"static field on oauth", `{` + oauthCred + `,"token":"t"}`},
		{"no access_token", `{"type":"mcp_oauth","server_url":"https://mcp.example.com/mcp"}`},
		{"expires_at not RFC 3339", `{` + oauthCred + `,"expires_at":"tomorrow"}`},
		{"refresh without refresh_token", `{` + oauthCred + `,"refresh":{"token_endpoint":"https://auth.example.com/token","client_id":"c"}}`},
		{"refresh token_endpoint not a URL", `{` + oauthCred + `,"refresh":{"token_endpoint":"auth.example.com","client_id":"c","refresh_token":"rt"}}`},
		{"refresh basic without secret", `{` + oauthCred + `,"refresh":{` + refresh + `,"token_endpoint_auth":{"type":"client_secret_basic"}}}`},
		{"refresh private_key_jwt", `{` + oauthCred + `,"refresh":{` + refresh + `,"token_endpoint_auth":{"type":"private_key_jwt"}}}`},
		{"client credentials without secret", `{"type":"oauth_client_credentials","server_url":"https://a.example.com/","client_id":"c"}`},
		{"client credentials without client_id", `{"type":"oauth_client_credentials","server_url":"https://a.example.com/","client_secret":"s"}`},
		{"private_key_jwt without a key", `{"type":"oauth_client_credentials","server_url":"https://a.example.com/","client_id":"c","token_endpoint_auth":{"type":"private_key_jwt","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}}`},
		{"client credentials refresh field", `{"type":"oauth_client_credentials","server_url":"https://a.example.com/","client_id":"c","client_secret":"s","refresh":{}}`},
		{"static type with oauth fields", `{"type":"static_bearer","server_url":"https://a.example.com/","token":"t","access_token":"x"}`},
		{"lease without holder", `{` + oauthCred + `,"refresh_lease":{"expires_at":"2026-12-01T12:00:00Z"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := vault.Parse([]byte(`{"credentials":[` + tt.cred + `]}`))
			if !errors.Is(err, vault.ErrVaultMalformed) {
				t.Fatalf("Parse: %v, want ErrVaultMalformed", err)
			}
			for _, secret := range []string{`"at"`, "AAAA"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error quotes a secret: %v", err)
				}
			}
		})
	}
	if _, err := vault.Parse([]byte(`{"Credentials":[]}`)); !errors.Is(err, vault.ErrVaultMalformed) {
		t.Errorf("Parse of a top-level name in another case: %v, want ErrVaultMalformed", err)
	}
}
