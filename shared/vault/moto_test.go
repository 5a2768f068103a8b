package vault_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// TestLookupOverTheWire runs Lookup against moto's Secrets Manager: real
// names with the prefix, real not-found and scheduled-for-deletion answers.
func TestLookupOverTheWire(t *testing.T) {
	moto := awstest.StartMoto(t)
	api := secretsmanager.NewFromConfig(moto.Config(t.Context()))
	const prefix = "mcpfn/vaults/"
	put := func(id, value string) {
		t.Helper()
		if _, err := api.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{
			Name: aws.String(prefix + id), SecretString: aws.String(value),
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("team", creds("https://mcp.example.com/other", "tok-team"))
	put("personal", creds("https://MCP.example.com:443/mcp", "tok-personal"))
	put("broken", `{"credentials": "not an array"}`)
	put("gone", creds(server, "tok-gone"))
	if _, err := api.DeleteSecret(t.Context(), &secretsmanager.DeleteSecretInput{SecretId: aws.String(prefix + "gone")}); err != nil {
		t.Fatal(err)
	}
	r := vault.NewResolver(api, prefix)

	got, err := r.Lookup(t.Context(), []string{"team", "personal"}, server)
	if err != nil {
		t.Fatal(err)
	}
	want := static(vault.Match{Found: true, VaultID: "personal", Token: "tok-personal",
		Hints: []string{"vault team has a credential for the same origin but a different path"}}, server)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lookup (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name, id string
		want     error
	}{
		{"missing", "nobody", vault.ErrVaultNotFound},
		{"scheduled for deletion", "gone", vault.ErrVaultNotFound},
		{"malformed", "broken", vault.ErrVaultMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.Lookup(t.Context(), []string{tt.id}, server); !errors.Is(err, tt.want) {
				t.Errorf("Lookup(%s): %v, want %v", tt.id, err, tt.want)
			}
		})
	}
}
