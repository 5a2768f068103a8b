package vaulttest_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

func TestSecretsWithResolver(t *testing.T) {
	var s vaulttest.Secrets
	s.PutCredentials("v/team", vault.Credential{ServerURL: "https://mcp.example.com/mcp", Token: "tok"})
	s.Put("v/broken", "{")
	boom := errors.New("boom")
	s.Fail("v/down", boom)
	r := vault.NewResolver(&s, "v/")

	got, err := r.Lookup(t.Context(), []string{"team"}, "https://mcp.example.com/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vault.Match{Found: true, VaultID: "team", Token: "tok"}, got); diff != "" {
		t.Errorf("Lookup (-want +got):\n%s", diff)
	}
	for id, want := range map[string]error{"missing": vault.ErrVaultNotFound, "broken": vault.ErrVaultMalformed, "down": boom} {
		if _, err := r.Lookup(t.Context(), []string{id}, "https://mcp.example.com/mcp"); !errors.Is(err, want) {
			t.Errorf("Lookup(%s): %v, want %v", id, err, want)
		}
	}
	if n := s.Reads(); n != 4 {
		t.Errorf("Reads() = %d, want 4", n)
	}
}
