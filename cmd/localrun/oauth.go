package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// secretsPrefix is MCPFN_SECRETS_PREFIX of a local run (moto only).
const secretsPrefix = "mcpfn/vaults/"

// oauthPart is the OAuth server of a local run: a loopback authorization
// server with rotating refresh tokens, the example server requiring its
// tokens, and the vault oauthVault in moto's Secrets Manager holding an
// mcp_oauth credential for it.
type oauthPart struct {
	as        *localstack.AuthServer
	serverURL string
	secret    string // the vault's secret name
	secrets   *secretsmanager.Client

	// refreshToken is the refresh token the vault held when last read,
	// kept to tell a rotation; never printed.
	refreshToken string
	requests     int // token requests the authorization server had answered then
}

// startOAuth starts the authorization server and the example server that
// requires its tokens, and writes the vault: an access token that expired
// an hour ago and a live refresh token, so the first OAuth invocation
// refreshes it.
func (s *stack) startOAuth(ctx context.Context, bin string, stateless bool) error {
	as, err := localstack.StartAuthServer(localstack.AuthOptions{})
	if err != nil {
		return err
	}
	s.onClose(func() error { as.Close(); return nil })
	args := []string{"-oauth-issuer", as.Issuer}
	if stateless {
		args = append(args, "-stateless")
	}
	u, err := s.startExampleServer(ctx, bin, args...)
	if err != nil {
		return err
	}
	o := &oauthPart{as: as, serverURL: u, secret: secretsPrefix + oauthVault,
		secrets: secretsmanager.NewFromConfig(s.moto.Config(ctx)), refreshToken: as.IssueRefreshToken()}
	cred := vault.Credential{
		Type:      vault.TypeMCPOAuth,
		ServerURL: u,
		Token:     "at-expired-" + randomHex(), // never issued: the server refuses it too
		ExpiresAt: time.Now().Add(-time.Hour).Truncate(time.Second),
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID,
			RefreshToken: o.refreshToken, Auth: vault.EndpointAuth{Type: "none"}},
	}
	if _, err := o.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(o.secret), SecretString: aws.String(string(vault.Encode(cred))),
	}); err != nil {
		return fmt.Errorf("create secret %s: %w", o.secret, err)
	}
	s.oauth = o
	return nil
}

// oauthReport is what an invocation did to the vault, without a secret.
type oauthReport struct {
	TokenRequests int       // token requests the invocation made
	Refreshed     bool      // a function logged "oauth token refreshed"
	LoggedRotated bool      // that line's rotated
	Credentials   []string  // the summary lines' credential and credential_type
	Rotated       bool      // the vault holds another refresh token than before
	ExpiresAt     time.Time // the vault's access token's expires_at
}

// report reads the vault after an invocation whose logs are logs.
func (o *oauthPart) report(ctx context.Context, logs []string) (oauthReport, error) {
	var r oauthReport
	n := len(o.as.TokenRequests())
	r.TokenRequests, o.requests = n-o.requests, n
	for _, l := range logs {
		var line struct {
			Msg            string `json:"msg"`
			VaultID        string `json:"vault_id"`
			Rotated        bool   `json:"rotated"`
			Credential     string `json:"credential"`
			CredentialType string `json:"credential_type"`
		}
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		switch {
		case line.Msg == "oauth token refreshed" && line.VaultID == oauthVault:
			r.Refreshed, r.LoggedRotated = true, line.Rotated
		case line.Msg == "work item" && line.Credential != "":
			r.Credentials = append(r.Credentials, line.Credential+" ("+line.CredentialType+")")
		}
	}
	// AWSCURRENT named, as package vault does: moto answers a request
	// without a stage from the version last put.
	out, err := o.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(o.secret), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		return r, fmt.Errorf("read secret %s: %w", o.secret, err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil || len(creds) != 1 || creds[0].Refresh == nil {
		return r, fmt.Errorf("secret %s no longer holds one mcp_oauth credential with a refresh block (%v)", o.secret, err)
	}
	r.Rotated = creds[0].Refresh.RefreshToken != o.refreshToken
	r.ExpiresAt = creds[0].ExpiresAt
	o.refreshToken = creds[0].Refresh.RefreshToken
	return r, nil
}

func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
