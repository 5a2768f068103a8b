package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/onboard"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// The auth scenarios' client identity: the suite's authorization servers
// approve at once and redirect to redirectURL, which nothing serves (the
// headless fetcher reads the code from the redirect); clientMetadataURL is
// the client ID metadata document the CIMD scenario expects.
const (
	redirectURL       = "http://localhost:3000/callback"
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
)

// authorizer returns the OAuth handler of an auth/* scenario: the
// onboarding flow mcpfn-auth runs, headless, with the pre-registered
// client the suite's context names, if any.
func authorizer(scenarioCtx json.RawMessage) (auth.OAuthHandler, error) {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if len(scenarioCtx) > 0 {
		if err := json.Unmarshal(scenarioCtx, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", envContext, err)
		}
	}
	client := guard.NewClient(mcp.DialTimeout)
	f, err := onboard.New(onboard.Options{
		Client:            client,
		RedirectURL:       redirectURL,
		Fetch:             onboard.Headless(client),
		ClientID:          c.ClientID,
		ClientSecret:      c.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
	})
	if err != nil {
		return nil, err
	}
	return f.Handler(), nil
}

// conformanceVault is the vault id the client-credentials scenarios'
// credential is looked up in.
const conformanceVault = "conformance"

// clientCredentialsToken obtains a token the way the functions do for an
// oauth_client_credentials credential (vault.Resolver.Lookup: discovery
// from the server's 401, the authorization server's metadata, the token
// request), from a vault holding the credential the suite's context names.
func clientCredentialsToken(ctx context.Context, serverURL string, scenarioCtx json.RawMessage) (string, error) {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		PrivateKey   string `json:"private_key_pem"`
	}
	if err := json.Unmarshal(scenarioCtx, &c); err != nil {
		return "", fmt.Errorf("%s: %w", envContext, err)
	}
	cred := vault.Credential{Type: vault.TypeClientCredentials, ServerURL: serverURL,
		Client: &vault.Client{ClientID: c.ClientID, ClientSecret: c.ClientSecret}}
	if c.PrivateKey != "" {
		cred.Client.Auth = &vault.EndpointAuth{Type: "private_key_jwt", PrivateKey: c.PrivateKey}
	}
	secrets := memorySecrets(vault.Encode(cred))
	r := vault.NewResolver(secrets, "", vault.WithOAuth(vault.OAuth{Secrets: secrets, HTTPClient: guard.NewClient(mcp.DialTimeout)}))
	m, err := r.Lookup(ctx, []string{conformanceVault}, serverURL)
	if err != nil {
		return "", err
	}
	return m.Token, nil
}

// memorySecrets is a vault held in memory: a client-credentials lookup
// reads it and never writes.
type memorySecrets []byte

func (s memorySecrets) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(string(s)), VersionId: aws.String("v1")}, nil
}

func (memorySecrets) PutSecretValue(context.Context, *secretsmanager.PutSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	return nil, errors.New("the conformance vault is read-only")
}

func (memorySecrets) UpdateSecretVersionStage(context.Context, *secretsmanager.UpdateSecretVersionStageInput, ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error) {
	return nil, errors.New("the conformance vault is read-only")
}
