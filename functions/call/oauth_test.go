package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// oauthFixture is an authorization server with rotating refresh tokens and
// a real MCP server that answers only its access tokens.
type oauthFixture struct {
	as  *oauthtest.Server
	mcp string // the MCP endpoint
}

func newOAuthFixture(t *testing.T, refuseAll bool) *oauthFixture {
	t.Helper()
	as := oauthtest.NewServer(t, oauthtest.Options{})
	h, _ := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	guarded := oauthtest.RequireBearer(as, ts.URL+"/.well-known/oauth-protected-resource/mcp", "", h)
	if refuseAll {
		guarded = oauthtest.RequireBearer(as, ts.URL+"/.well-known/oauth-protected-resource/mcp", "",
			http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }))
	}
	mux.Handle("/mcp", guarded)
	return &oauthFixture{as: as, mcp: ts.URL + "/mcp"}
}

// credential is an mcp_oauth credential for f's server with the given
// access token, expiry and refresh token (client_secret_basic).
func (f *oauthFixture) credential(access string, expires time.Time, refresh string) vault.Credential {
	return vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: f.mcp, Token: access, ExpiresAt: expires,
		Refresh: &vault.Refresh{TokenEndpoint: f.as.TokenURL, ClientID: f.as.Options.ClientID, RefreshToken: refresh,
			Auth: vault.EndpointAuth{Type: "client_secret_basic", ClientSecret: f.as.Options.ClientSecret}}}
}

// stored reads vault id's current credentials back from moto.
func (s *stack) stored(t *testing.T, id string) []vault.Credential {
	t.Helper()
	out, err := s.Secrets.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(s.Prefix + id), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

func (f *oauthFixture) body(extra map[string]any) []byte {
	m := map[string]any{"server_url": f.mcp, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}, "vault_ids": []string{"oauth"}}
	for k, v := range extra {
		m[k] = v
	}
	return []byte(callBody(m))
}

// TestOAuthCallRefreshesAnExpiredToken: an access token past its expiry
// is refreshed before connecting, the rotation is written back before it
// is used, and the vault's other credential is kept.
func TestOAuthCallRefreshesAnExpiredToken(t *testing.T) {
	s := newStack(t, nil)
	f := newOAuthFixture(t, false)
	rt := f.as.IssueRefreshToken()
	other := vault.Credential{Type: vault.TypeStaticBearer, ServerURL: "https://other.example/mcp", Token: "other-token"}
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"oauth", other, f.credential("expired-access", time.Now().Add(-time.Minute), rt))

	out, err := s.Invoke(t, f.body(map[string]any{"tool_use_id": "toolu_1"}), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	if !strings.Contains(string(got), `"is_error":false`) {
		t.Fatalf("result %s", got)
	}
	if reqs := f.as.TokenRequests(); len(reqs) != 1 || reqs[0].GrantType != "refresh_token" || reqs[0].RefreshToken != rt {
		t.Errorf("token requests %+v, want one refresh with the stored token", reqs)
	}
	creds := s.stored(t, "oauth")
	if len(creds) != 2 || creds[0].Token != "other-token" {
		t.Fatalf("vault after the refresh: %v", creds)
	}
	c := creds[1]
	if c.Token == "expired-access" || !f.as.Valid(c.Token) || c.Refresh == nil || c.Refresh.RefreshToken == rt {
		t.Errorf("stored credential %v: want the new access token and the rotated refresh token", c)
	}
	if d := time.Until(c.ExpiresAt); d < 50*time.Minute || d > 61*time.Minute {
		t.Errorf("expires_at %v, want about an hour from now", c.ExpiresAt)
	}
	canary(t, s, out, rt, c.Token, c.Refresh.RefreshToken, f.as.Options.ClientSecret,
		base64.StdEncoding.EncodeToString([]byte(f.as.Options.ClientID+":"+f.as.Options.ClientSecret)))
}

// TestOAuthRefusedFreshToken: a token the vault believes fresh that the
// server refuses is refreshed once, and the call made with the new token.
func TestOAuthRefusedFreshToken(t *testing.T) {
	s := newStack(t, nil)
	f := newOAuthFixture(t, false)
	rt := f.as.IssueRefreshToken()
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"oauth", f.credential("revoked-but-unexpired", time.Now().Add(time.Hour), rt))
	if _, err := s.Invoke(t, f.body(map[string]any{"tool_use_id": "toolu_2"}), time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(f.as.TokenRequests()); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	if sums := s.Logs.Summaries(); len(sums) != 1 || sums[0]["token_refreshed_after_refusal"] != true {
		t.Errorf("summaries %v, want token_refreshed_after_refusal", sums)
	}
}

// TestOAuthFailures: each ends the call with its wire type after at most
// one token request, and the tool never runs.
func TestOAuthFailures(t *testing.T) {
	tests := []struct {
		name        string
		refuseAll   bool
		setup       func(f *oauthFixture, rt string) vault.Credential
		wantType    string
		wantTokens  int
		wantMessage string
	}{
		{"a refused grant", false, func(f *oauthFixture, rt string) vault.Credential {
			f.as.Revoke(rt)
			return f.credential("expired", time.Now().Add(-time.Minute), rt)
		}, "mcp_authentication_failed_error", 1, "vault oauth"},
		{"expired without a refresh block", false, func(f *oauthFixture, _ string) vault.Credential {
			c := f.credential("expired", time.Now().Add(-time.Minute), "")
			c.Refresh = nil
			return c
		}, "mcp_authentication_failed_error", 0, "vault oauth"},
		{"the server refuses the refreshed token too", true, func(f *oauthFixture, rt string) vault.Credential {
			return f.credential("unexpired", time.Now().Add(time.Hour), rt)
		}, "mcp_authentication_failed_error", 1, ""},
		{"a token endpoint on the metadata address", false, func(f *oauthFixture, rt string) vault.Credential {
			c := f.credential("expired", time.Now().Add(-time.Minute), rt)
			c.Refresh.TokenEndpoint = "http://169.254.169.254/token"
			return c
		}, "mcp_egress_denied_error", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, nil)
			f := newOAuthFixture(t, tt.refuseAll)
			rt := f.as.IssueRefreshToken()
			vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"oauth", tt.setup(f, rt))
			_, err := s.Invoke(t, f.body(nil), time.Minute)
			ive, ok := err.(messages.InvokeResponse_Error)
			if !ok || ive.Type != tt.wantType || !strings.Contains(ive.Message, tt.wantMessage) {
				t.Fatalf("error %v, want %s mentioning %q", err, tt.wantType, tt.wantMessage)
			}
			if n := len(f.as.TokenRequests()); n != tt.wantTokens {
				t.Errorf("%d token requests, want %d", n, tt.wantTokens)
			}
			if strings.Contains(ive.Message, "/mcp") || strings.Contains(ive.Message, "/token") {
				t.Errorf("message %q names a URL path", ive.Message)
			}
		})
	}
}

// canary checks no secret reached the result, the logs or the ledger.
func canary(t *testing.T, s *stack, out any, secrets ...string) {
	t.Helper()
	res, _ := json.Marshal(out)
	items, err := s.DDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.calls)})
	if err != nil {
		t.Fatal(err)
	}
	dump, _ := json.Marshal(items.Items)
	for _, where := range []struct{ name, text string }{{"result", string(res)}, {"logs", s.Logs.String()}, {"ledger", string(dump)}} {
		for _, sec := range secrets {
			if sec != "" && strings.Contains(where.text, sec) {
				t.Errorf("the %s carries a secret (%d bytes)", where.name, len(sec))
			}
		}
	}
}
