package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// TestOAuthClientCredentialsDiscovery: a client-credentials credential
// without a token endpoint finds it the MCP way (the server's 401, its
// protected-resource metadata, the authorization server's metadata), and a
// warm instance reuses the token for the next work item.
func TestOAuthClientCredentialsDiscovery(t *testing.T) {
	s := newStack(t)
	as := oauthtest.NewServer(t, oauthtest.Options{})
	h, _ := mcptest.NewHandler(mcptest.Options{})
	res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{Handler: h})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"m2m", vault.Credential{Type: vault.TypeClientCredentials, ServerURL: res.URL,
		Client: &vault.Client{ClientID: as.Options.ClientID, ClientSecret: as.Options.ClientSecret}})

	for i, id := range []string{"m2m-1", "m2m-2"} {
		out, err := s.invoke(t, []byte(body(map[string]any{"catalog_id": id, "server_url": res.URL, "vault_ids": []string{"m2m"}})))
		if err != nil {
			t.Fatalf("discovery %d: %v", i, err)
		}
		var got struct {
			ToolCount int `json:"tool_count"`
		}
		if b, _ := json.Marshal(out); json.Unmarshal(b, &got) != nil || got.ToolCount == 0 {
			t.Errorf("discovery %d: %s, want tools", i, b)
		}
	}
	reqs := as.TokenRequests()
	if len(reqs) != 1 || reqs[0].GrantType != "client_credentials" || reqs[0].AuthMethod != "client_secret_basic" {
		t.Errorf("token requests %+v, want one client_credentials grant (client_secret_basic, the first the metadata lists)", reqs)
	}
	if strings.Contains(s.Logs.String(), as.Options.ClientSecret) {
		t.Error("the logs carry the client secret")
	}
}
