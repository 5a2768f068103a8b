package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/mcpfn/mcpfn/shared/text"
)

// The server URL on the head (docs/catalog.md "Sealed server URLs"): the
// URL sealed by a Sealer, beside its origin in the clear.
const (
	SealedURLAttribute = "server_url_sealed"
	OriginAttribute    = "server_origin"
	// SealContextKey is the KMS encryption context key; its value is the
	// catalog id.
	SealContextKey = "catalog_id"
)

// ErrNoServerURL: the catalog's head keeps no server URL to discover it
// again (no head, a store without a Sealer, or the directory store).
var ErrNoServerURL = errors.New("catalog: no stored server URL")

// Sealer seals a catalog's server URL for its head and opens it again.
// Both bind the sealed bytes to the catalog id: bytes sealed under one id
// do not open under another. Safe for concurrent use.
type Sealer interface {
	Seal(ctx context.Context, id, url string) ([]byte, error)
	Open(ctx context.Context, id string, sealed []byte) (string, error)
}

// KMSAPI is the part of the KMS client KMS uses.
type KMSAPI interface {
	Encrypt(ctx context.Context, in *kms.EncryptInput, opts ...func(*kms.Options)) (*kms.EncryptOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ KMSAPI = (*kms.Client)(nil)

// KMS is a Sealer over one AWS KMS key (KeyID: its id, ARN or alias):
// Encrypt and Decrypt with the encryption context {SealContextKey: id}.
type KMS struct {
	API   KMSAPI
	KeyID string
}

var _ Sealer = KMS{}

// Seal encrypts url under the catalog id.
func (k KMS) Seal(ctx context.Context, id, url string) ([]byte, error) {
	out, err := k.API.Encrypt(ctx, &kms.EncryptInput{
		KeyId:             aws.String(k.KeyID),
		Plaintext:         []byte(url),
		EncryptionContext: map[string]string{SealContextKey: id},
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: seal the server URL of %q: %w", id, err)
	}
	return out.CiphertextBlob, nil
}

// Open decrypts sealed under the catalog id; bytes sealed under another id
// or key fail.
func (k KMS) Open(ctx context.Context, id string, sealed []byte) (string, error) {
	out, err := k.API.Decrypt(ctx, &kms.DecryptInput{
		KeyId:             aws.String(k.KeyID),
		CiphertextBlob:    sealed,
		EncryptionContext: map[string]string{SealContextKey: id},
	})
	if err != nil {
		return "", fmt.Errorf("catalog: open the server URL of %q: %w", id, err)
	}
	return string(out.Plaintext), nil
}

// WithSealer makes Put seal a Schedule's server URL with s; without one,
// the head keeps the origin only and ServerURL finds nothing.
func WithSealer(s Sealer) DynamoOption { return func(d *Dynamo) { d.sealer = s } }

// ServerURL returns the server URL the head of id keeps, opened: the
// sealed one, or one a head written before sealing keeps in the clear
// (server_url, until its next discovery). Errors wrap ErrNoServerURL,
// ErrInvalidID, ErrUnavailable, or the Sealer's.
func (s *Dynamo) ServerURL(ctx context.Context, id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	h, err := s.head(ctx, id)
	switch {
	case err != nil:
		return "", err
	case len(h.sched.SealedURL) > 0 && s.sealer != nil:
		return s.sealer.Open(ctx, id, h.sched.SealedURL)
	case len(h.sched.SealedURL) > 0:
		return "", fmt.Errorf("%w: catalog %q: the store has no key to open its sealed URL", ErrNoServerURL, id)
	case h.sched.ClearURL != "":
		return h.sched.ClearURL, nil
	case !h.exists:
		return "", fmt.Errorf("%w: catalog %q has no head", ErrNoServerURL, id)
	}
	return "", fmt.Errorf("%w: catalog %q keeps none", ErrNoServerURL, id)
}

// ServerURL of the directory store: it keeps no schedule, so always
// ErrNoServerURL.
func (s *Dir) ServerURL(_ context.Context, id string) (string, error) {
	return "", fmt.Errorf("%w: catalog %q: the directory store keeps none", ErrNoServerURL, id)
}

// sealURL returns sc's server URL as the head keeps it for id: sealed
// when the store has a Sealer, and its origin. Zero when sc is nil.
func (s *Dynamo) sealURL(ctx context.Context, id string, sc *Schedule) (sealedURL, error) {
	if sc == nil {
		return sealedURL{}, nil
	}
	u := sealedURL{origin: text.Origin(sc.ServerURL)}
	if s.sealer != nil {
		var err error
		if u.sealed, err = s.sealer.Seal(ctx, id, sc.ServerURL); err != nil {
			return sealedURL{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return u, nil
}
