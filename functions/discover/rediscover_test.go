package main

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/vault"
)

// TestRediscoveryOpensTheStoredURL: a request without server_url
// discovers the catalog from the URL its store keeps, with the request's
// vaults, and records it again; a catalog that keeps none is refused and
// nothing is recorded on it.
func TestRediscoveryOpensTheStoredURL(t *testing.T) {
	e := newEnv(t)
	e.Secrets.PutCredentials("mcpfn/vaults/team", vault.Credential{ServerURL: serverURL, Token: "the-token"})
	if got := e.Invoke(t, request(nil)); got.Error != nil {
		t.Fatal(got.Error)
	}
	got := e.Invoke(t, request(map[string]any{"server_url": nil, "vault_ids": []string{"team"}}))
	if got.Error != nil {
		t.Fatal(got.Error)
	}
	cfgs := e.server.Configs()
	if len(cfgs) != 2 || cfgs[1].URL != serverURL || cfgs[1].BearerToken != "the-token" {
		t.Errorf("re-discovery connected with %+v, want the stored URL and the vault's token", cfgs)
	}
	puts := e.store.puts["example"]
	if len(puts) != 2 || puts[1].Schedule == nil || puts[1].Schedule.ServerURL != serverURL {
		t.Errorf("puts %+v, want the re-discovery recorded with its URL", puts)
	}

	got = e.Invoke(t, request(map[string]any{"catalog_id": "unknown", "server_url": nil}))
	if got.Error == nil || got.Error.Type != "invalid_request_error" {
		t.Errorf("no stored URL: %+v, want invalid_request_error", got.Error)
	}
	if f := e.store.failures["unknown"]; len(f) != 0 || e.schedule.failures["unknown"] != 0 {
		t.Errorf("a request naming no server recorded failures %v", f)
	}
}
