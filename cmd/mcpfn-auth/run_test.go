package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// fixture is an authorization server and a real MCP server that answers
// only its tokens, challenging for scope "tools".
type fixture struct {
	as  *oauthtest.Server
	res *oauthtest.Resource
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	as := oauthtest.NewServer(t, oauthtest.Options{})
	h, _ := mcptest.NewHandler(mcptest.Options{})
	return fixture{as, oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Handler: h, Scope: "tools"})}
}

// allowFixture lets the guard reach the fixture's two loopback ports.
func allowFixture(t *testing.T, f fixture) {
	t.Helper()
	p, err := guard.NewPolicy(f.as.AllowEntry(), f.res.AllowEntry())
	if err != nil {
		t.Fatal(err)
	}
	old := guard.Default()
	guard.SetDefault(p)
	t.Cleanup(func() { guard.SetDefault(old) })
}

// browser stands in for the operator's: it follows the authorization
// server's redirect to the command's loopback listener.
func browser(rawURL string) error {
	go func() {
		resp, err := http.Get(rawURL)
		if err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}

func TestOnboardWritesTheCredential(t *testing.T) {
	f := newFixture(t)
	allowFixture(t, f)
	path := filepath.Join(t.TempDir(), "vault.json")
	other := `{"server_url":"https://other.example/mcp","token":"kept-as-is"}`
	if err := os.WriteFile(path, []byte(`{"credentials":[`+other+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	o := options{vaultID: "v1", serverURL: f.res.URL}
	var out bytes.Buffer
	for round := range 2 { // the second onboarding replaces the first's credential
		if err := onboardServer(ctx, o, fileStore{path: path}, browser, &out, &out); err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, out.String())
		}
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Credentials []json.RawMessage `json:"credentials"`
	}
	if err := json.Unmarshal(doc, &v); err != nil || len(v.Credentials) != 2 {
		t.Fatalf("vault %s (%v): want the other credential and one mcp_oauth", doc, err)
	}
	if string(v.Credentials[0]) != other {
		t.Errorf("other credential %s, want it kept as %s", v.Credentials[0], other)
	}
	creds, err := vault.Parse(doc) // what the functions read
	if err != nil || len(creds) != 2 {
		t.Fatalf("vault.Parse: %v, %v", creds, err)
	}
	c := creds[1]
	switch {
	case c.Type != vault.TypeMCPOAuth || c.Token == "" || c.Refresh == nil:
		t.Fatalf("credential %v", c)
	case time.Until(c.ExpiresAt) < 50*time.Minute || time.Until(c.ExpiresAt) > 61*time.Minute:
		t.Errorf("expires_at %v, want about an hour from now", c.ExpiresAt)
	case c.Refresh.TokenEndpoint != f.as.TokenURL || c.Refresh.ClientID != f.as.Options.ClientID:
		t.Errorf("refresh %v", c.Refresh)
	case c.Refresh.Auth.Type != "client_secret_basic" || c.Refresh.Auth.ClientSecret != f.as.Options.ClientSecret:
		t.Errorf("token endpoint auth %v, want client_secret_basic with the registered secret", c.Refresh.Auth)
	case c.Refresh.Resource != f.res.URL || !strings.Contains(c.Refresh.Scope, "tools"):
		t.Errorf("resource %q scope %q, want the MCP URL and the challenged scope", c.Refresh.Resource, c.Refresh.Scope)
	case !f.as.Live(c.Refresh.RefreshToken) || !f.as.Valid(c.Token):
		t.Error("the stored refresh token is not live at the authorization server")
	}
	if s := out.String(); strings.Contains(s, c.Token) || strings.Contains(s, c.Refresh.RefreshToken) ||
		strings.Contains(s, c.Refresh.Auth.ClientSecret) {
		t.Errorf("output shows a token or the secret:\n%s", s)
	}
}

func TestOnboardRefusesWhatTheGuardDenies(t *testing.T) {
	f := newFixture(t) // the MCP server is allowed; the authorization server, on loopback, is not
	old := guard.Default()
	p, _ := guard.NewPolicy(f.res.AllowEntry())
	guard.SetDefault(p)
	t.Cleanup(func() { guard.SetDefault(old) })
	path := filepath.Join(t.TempDir(), "vault.json")
	err := onboardServer(t.Context(), options{vaultID: "v1", serverURL: f.res.URL}, fileStore{path: path}, browser, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, guard.ErrDenied) {
		t.Fatalf("err %v, want guard.ErrDenied", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a vault was written: %v", err)
	}
}

func TestUpsert(t *testing.T) {
	c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: "https://a.example/mcp", Token: "t"}
	tests := []struct {
		name, doc string
		exists    bool
		want      string
		wantErr   error
	}{
		{"new vault", "", false, `{"credentials":[{"type":"mcp_oauth","server_url":"https://a.example/mcp","access_token":"t"}]}`, nil},
		{"replaced by normalised URL", `{"credentials":[{"server_url":"HTTPS://A.example:443/mcp","token":"old"}]}`, true,
			`{"credentials":[{"type":"mcp_oauth","server_url":"https://a.example/mcp","access_token":"t"}]}`, nil},
		{"appended", `{"credentials":[{"server_url":"https://a.example/other","token":"x"}]}`, true,
			`{"credentials":[{"server_url":"https://a.example/other","token":"x"},{"type":"mcp_oauth","server_url":"https://a.example/mcp","access_token":"t"}]}`, nil},
		{"not a vault", `[]`, true, "", vault.ErrVaultMalformed},
		{"unknown field", `{"credentials":[],"Credentials":[]}`, true, "", vault.ErrVaultMalformed},
		{"trailing data", `{"credentials":[]} {}`, true, "", vault.ErrVaultMalformed},
	}
	for _, tt := range tests {
		got, err := upsert([]byte(tt.doc), tt.exists, "https://a.example/mcp", c)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && string(got) != tt.want) {
			t.Errorf("%s: %s, %v; want %s, %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSecretsStoreOverMoto(t *testing.T) {
	m := awstest.SharedMoto(t)
	api := secretsmanager.NewFromConfig(m.Config(t.Context()), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(m.Endpoint()) })
	s := secretsStore{api: api, prefix: awstest.UniqueName("auth") + "/"}
	ctx := t.Context()
	if _, ok, err := s.Read(ctx, "v1"); ok || err != nil {
		t.Fatalf("missing vault: %v %v", ok, err)
	}
	for i, exists := range []bool{false, true} {
		doc := fmt.Sprintf(`{"credentials":[{"server_url":"https://a.example/mcp","token":"t%d"}]}`, i)
		if err := s.Write(ctx, "v1", []byte(doc), exists); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Read(ctx, "v1")
		if !ok || err != nil || string(got) != doc {
			t.Fatalf("read back %s %v %v, want %s", got, ok, err, doc)
		}
	}
}
