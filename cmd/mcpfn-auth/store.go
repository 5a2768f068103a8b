package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/shared/onboard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// vaultStore reads and writes one vault's JSON document; Read reports
// false for a vault that does not exist yet.
type vaultStore interface {
	Read(ctx context.Context, vaultID string) ([]byte, bool, error)
	Write(ctx context.Context, vaultID string, doc []byte, exists bool) error
}

// credentialOf is the mcp_oauth credential of g for serverURL; without a
// refresh token it has no refresh block.
func credentialOf(serverURL string, g onboard.Grant) vault.Credential {
	c := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: serverURL, Token: g.AccessToken, ExpiresAt: g.ExpiresAt}
	if g.RefreshToken != "" {
		c.Refresh = &vault.Refresh{TokenEndpoint: g.TokenEndpoint, ClientID: g.ClientID, RefreshToken: g.RefreshToken,
			Scope: g.Scope, Resource: g.Resource, Auth: vault.EndpointAuth{Type: g.AuthMethod}}
		if g.AuthMethod != "none" {
			c.Refresh.Auth.ClientSecret = g.ClientSecret
		}
	}
	return c
}

// writeCredential puts g's credential into the vault: in place of the
// credential for the same server URL (normalised), else appended. The
// vault's other credentials are kept as they are.
func writeCredential(ctx context.Context, s vaultStore, vaultID, serverURL string, g onboard.Grant) error {
	want, err := vault.NormalizeURL(serverURL)
	if err != nil {
		return fmt.Errorf("server URL: %w", err)
	}
	doc, exists, err := s.Read(ctx, vaultID)
	if err != nil {
		return err
	}
	out, err := upsert(doc, exists, want, credentialOf(serverURL, g))
	if err != nil {
		return fmt.Errorf("vault %s: %w", vaultID, err)
	}
	return s.Write(ctx, vaultID, out, exists)
}

// upsert returns doc with c in place of the credential whose server_url
// normalises to want, or appended; a missing vault starts empty.
func upsert(doc []byte, exists bool, want string, c vault.Credential) ([]byte, error) {
	var v struct {
		Credentials []json.RawMessage `json:"credentials"`
	}
	if exists {
		if err := runner.Decode(doc, &v); err != nil { // exact: no case-folded or duplicate names, no trailing data
			return nil, fmt.Errorf("%w: not a vault document (want {\"credentials\": [...]}): %w", vault.ErrVaultMalformed, err)
		}
	}
	raw := vault.EncodeCredential(c)
	for i, old := range v.Credentials {
		var k struct {
			ServerURL string `json:"server_url"`
		}
		if json.Unmarshal(old, &k) != nil {
			continue
		}
		if norm, err := vault.NormalizeURL(k.ServerURL); err == nil && norm == want {
			v.Credentials[i] = raw
			return json.Marshal(v)
		}
	}
	v.Credentials = append(v.Credentials, raw)
	return json.Marshal(v)
}

// fileStore is a vault kept in a local file (for make run).
type fileStore struct{ path string }

func (f fileStore) Read(_ context.Context, _ string) ([]byte, bool, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// Write replaces the file atomically, readable by its owner only.
func (f fileStore) Write(_ context.Context, _ string, doc []byte, _ bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".vault-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(doc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.path)
}

// secretsAPI is the part of *secretsmanager.Client secretsStore uses.
type secretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
}

// secretsStore is the vault secret <prefix><vault id>.
type secretsStore struct {
	api    secretsAPI
	prefix string
}

func (s secretsStore) Read(ctx context.Context, vaultID string) ([]byte, bool, error) {
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.prefix + vaultID)})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read vault %s: %w", vaultID, err)
	case out.SecretString != nil:
		return []byte(*out.SecretString), true, nil
	}
	return out.SecretBinary, true, nil
}

func (s secretsStore) Write(ctx context.Context, vaultID string, doc []byte, exists bool) error {
	name := aws.String(s.prefix + vaultID)
	var err error
	if exists {
		_, err = s.api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: name, SecretString: aws.String(string(doc))})
	} else {
		_, err = s.api.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: name, SecretString: aws.String(string(doc))})
	}
	if err != nil {
		return fmt.Errorf("write vault %s: %w", vaultID, err)
	}
	return nil
}
