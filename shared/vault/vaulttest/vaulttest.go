// Package vaulttest is an in-memory Secrets Manager for tests of code that
// resolves credentials through package vault.
package vaulttest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/shared/vault"
)

var _ vault.SecretsAPI = (*Secrets)(nil)

// Secrets answers GetSecretValue from secret names set with Put, Fail or
// PutCredentials; an unknown name is a ResourceNotFoundException, as in
// Secrets Manager. Safe for concurrent use; the zero value is empty.
type Secrets struct {
	mu     sync.Mutex
	values map[string]string
	errs   map[string]error
	reads  int
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
	return s.reads
}

// GetSecretValue returns the value stored under in.SecretId.
func (s *Secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	name := aws.ToString(in.SecretId)
	if err := s.errs[name]; err != nil {
		return nil, err
	}
	v, ok := s.values[name]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	}
	return &secretsmanager.GetSecretValueOutput{Name: aws.String(name), SecretString: aws.String(v)}, nil
}

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
