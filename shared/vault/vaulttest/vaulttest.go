// Package vaulttest helps test code that resolves credentials through
// package vault: an in-memory Secrets Manager (Secrets), the vault format
// (JSON), and CreateSecret for a real or moto Secrets Manager.
package vaulttest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/shared/vault"
)

var _ vault.SecretsAPI = (*Secrets)(nil)

// Secrets answers GetSecretValue from secret names set with Put,
// PutBinary, PutCredentials or Fail; an unknown name is a
// ResourceNotFoundException, as in Secrets Manager. Safe for concurrent
// use; the zero value is empty.
type Secrets struct {
	mu     sync.Mutex
	values map[string]string
	binary map[string][]byte
	errs   map[string]error
	asked  []string
}

// Put stores a secret's string value under its full name.
func (s *Secrets) Put(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = make(map[string]string)
	}
	s.values[name] = value
}

// PutBinary stores a secret's binary value under its full name.
func (s *Secrets) PutBinary(name string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.binary == nil {
		s.binary = make(map[string][]byte)
	}
	s.binary[name] = value
}

// PutCredentials stores a vault holding creds in the vault package's format.
func (s *Secrets) PutCredentials(name string, creds ...vault.Credential) {
	s.Put(name, JSON(creds...))
}

// Fail makes reads of name return err.
func (s *Secrets) Fail(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs = make(map[string]error)
	}
	s.errs[name] = err
}

// Reads is the number of GetSecretValue calls so far.
func (s *Secrets) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

// Asked returns the secret names GetSecretValue was called with, in order.
func (s *Secrets) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// GetSecretValue returns the value stored under in.SecretId.
func (s *Secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := aws.ToString(in.SecretId)
	s.asked = append(s.asked, name)
	if err := s.errs[name]; err != nil {
		return nil, err
	}
	if b, ok := s.binary[name]; ok {
		return &secretsmanager.GetSecretValueOutput{Name: aws.String(name), SecretBinary: b}, nil
	}
	v, ok := s.values[name]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	}
	return &secretsmanager.GetSecretValueOutput{Name: aws.String(name), SecretString: aws.String(v)}, nil
}

// CreateSecret creates the secret name holding creds in the vault format,
// through client (for example one of an awstest.Moto). An error fails tb.
func CreateSecret(tb testing.TB, client SecretCreator, name string, creds ...vault.Credential) {
	tb.Helper()
	if _, err := client.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(JSON(creds...))}); err != nil {
		tb.Fatalf("vaulttest: create secret %s: %v", name, err)
	}
}

// SecretCreator is the part of *secretsmanager.Client CreateSecret uses.
type SecretCreator interface {
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
}

var _ SecretCreator = (*secretsmanager.Client)(nil)

// JSON is the vault value holding creds, tokens included (Credential's own
// MarshalJSON redacts them).
func JSON(creds ...vault.Credential) string {
	type cred struct {
		ServerURL string `json:"server_url"`
		Token     string `json:"token"`
	}
	doc := struct {
		Credentials []cred `json:"credentials"`
	}{Credentials: []cred{}}
	for _, c := range creds {
		doc.Credentials = append(doc.Credentials, cred{c.ServerURL, c.Token})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return string(b)
}
