package vaulttest_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
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
	if diff := cmp.Diff(vault.Match{Found: true, VaultID: "team", Type: vault.TypeStaticBearer, ServerURL: "https://mcp.example.com/mcp", Token: "tok", Secrets: []string{"tok"}}, got); diff != "" {
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

func TestSecretsBinaryAndAsked(t *testing.T) {
	var s vaulttest.Secrets
	s.PutBinary("v/bin", []byte(vaulttest.JSON(vault.Credential{ServerURL: "https://mcp.example.com/mcp", Token: "tok-bin"})))
	r := vault.NewResolver(&s, "v/")
	got, err := r.Lookup(t.Context(), []string{"missing", "bin"}, "https://mcp.example.com/mcp")
	if !errors.Is(err, vault.ErrVaultNotFound) {
		t.Fatalf("Lookup = %v, %v; want ErrVaultNotFound for the first vault", got, err)
	}
	if got, err = r.Lookup(t.Context(), []string{"bin"}, "https://mcp.example.com/mcp"); err != nil || got.Token != "tok-bin" {
		t.Errorf("Lookup(bin) = %v, %v; want the binary secret's token", got, err)
	}
	if diff := cmp.Diff([]string{"v/missing", "v/bin"}, s.Asked()); diff != "" {
		t.Errorf("Asked (-want +got):\n%s", diff)
	}
}

func TestCreateSecretOverTheWire(t *testing.T) {
	m := awstest.StartMoto(t)
	api := secretsmanager.NewFromConfig(m.Config(t.Context()))
	vaulttest.CreateSecret(t, api, "v/team", vault.Credential{ServerURL: "https://mcp.example.com/mcp", Token: "tok"})
	got, err := vault.NewResolver(api, "v/").Lookup(t.Context(), []string{"team"}, "https://mcp.example.com/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vault.Match{Found: true, VaultID: "team", Type: vault.TypeStaticBearer, ServerURL: "https://mcp.example.com/mcp", Token: "tok", Secrets: []string{"tok"}}, got); diff != "" {
		t.Errorf("Lookup (-want +got):\n%s", diff)
	}
}
