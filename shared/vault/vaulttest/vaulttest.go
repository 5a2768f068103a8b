// Package vaulttest helps test code that resolves credentials through
// package vault: an in-memory Secrets Manager (Secrets), the vault format
// (JSON), and CreateSecret for a real or moto Secrets Manager.
package vaulttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mcpfn/mcpfn/shared/vault"
)

var (
	_ vault.SecretsAPI    = (*Secrets)(nil)
	_ vault.SecretsWriter = (*Secrets)(nil)
)

// Secrets answers GetSecretValue from secret names set with Put,
// PutBinary, PutCredentials or Fail; an unknown name is a
// ResourceNotFoundException, as in Secrets Manager. PutSecretValue and
// UpdateSecretVersionStage keep versions as Secrets Manager does for the
// AWSCURRENT label: a version put with other stages is not current until
// UpdateSecretVersionStage moves AWSCURRENT onto it from the version that
// holds it (else InvalidParameterException). Safe for concurrent use; the
// zero value is empty.
type Secrets struct {
	mu       sync.Mutex
	values   map[string]string // the AWSCURRENT value
	current  map[string]string // the AWSCURRENT version id
	versions map[string]string // name + "\x00" + version id → value
	binary   map[string][]byte
	errs     map[string]error
	asked    []string
	writes   int
	seq      int
}

// Put stores a secret's string value under its full name, as a new
// current version.
func (s *Secrets) Put(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(name, value, "", true)
}

func (s *Secrets) put(name, value, version string, current bool) string {
	if s.values == nil {
		s.values, s.current, s.versions = map[string]string{}, map[string]string{}, map[string]string{}
	}
	if version == "" {
		s.seq++
		version = fmt.Sprintf("v%032d", s.seq)
	}
	s.versions[name+"\x00"+version] = value
	if current {
		s.values[name] = value
		s.current[name] = version
	}
	return version
}

// Writes is the number of PutSecretValue calls so far.
func (s *Secrets) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Versions is the number of versions of name stored so far, the first
// included.
func (s *Secrets) Versions(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.versions {
		if strings.HasPrefix(k, name+"\x00") {
			n++
		}
	}
	return n
}

// Value returns the current string value of name.
func (s *Secrets) Value(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[name]
}

// PutSecretValue stores a new version of an existing secret; it becomes
// current unless VersionStages omits AWSCURRENT.
func (s *Secrets) PutSecretValue(_ context.Context, in *secretsmanager.PutSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := aws.ToString(in.SecretId)
	s.writes++
	if err := s.errs[name]; err != nil {
		return nil, err
	}
	if _, ok := s.values[name]; !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	}
	version := aws.ToString(in.ClientRequestToken)
	if old, ok := s.versions[name+"\x00"+version]; ok && version != "" {
		if old != aws.ToString(in.SecretString) {
			return nil, &types.ResourceExistsException{Message: aws.String("You can't use ClientRequestToken " + version + " because that value is already in use.")}
		}
		return &secretsmanager.PutSecretValueOutput{Name: in.SecretId, VersionId: aws.String(version)}, nil
	}
	current := in.VersionStages == nil || slices.Contains(in.VersionStages, "AWSCURRENT")
	version = s.put(name, aws.ToString(in.SecretString), version, current)
	return &secretsmanager.PutSecretValueOutput{Name: in.SecretId, VersionId: aws.String(version)}, nil
}

// UpdateSecretVersionStage moves AWSCURRENT (the only label it knows) from
// RemoveFromVersionId, which must hold it, to MoveToVersionId.
func (s *Secrets) UpdateSecretVersionStage(_ context.Context, in *secretsmanager.UpdateSecretVersionStageInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := aws.ToString(in.SecretId)
	if aws.ToString(in.VersionStage) != "AWSCURRENT" {
		return nil, &types.InvalidParameterException{Message: aws.String("vaulttest: only AWSCURRENT moves")}
	}
	if s.current[name] != aws.ToString(in.RemoveFromVersionId) {
		return nil, &types.InvalidParameterException{Message: aws.String("Version stage AWSCURRENT not found in version " + aws.ToString(in.RemoveFromVersionId))}
	}
	to := aws.ToString(in.MoveToVersionId)
	v, ok := s.versions[name+"\x00"+to]
	if !ok {
		return nil, &types.InvalidParameterException{Message: aws.String("Not a valid version: " + to)}
	}
	s.values[name], s.current[name] = v, to
	return &secretsmanager.UpdateSecretVersionStageOutput{Name: in.SecretId}, nil
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
	return &secretsmanager.GetSecretValueOutput{Name: aws.String(name), SecretString: aws.String(v), VersionId: aws.String(s.current[name])}, nil
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

// JSON is the vault value holding creds, secrets included (Credential's
// own MarshalJSON redacts them): vault.Encode as a string.
func JSON(creds ...vault.Credential) string {
	return string(vault.Encode(creds...))
}
