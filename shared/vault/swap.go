package vault

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// errSuperseded: the credential no longer holds the refresh token a
// write-back was for (someone replaced it); nothing was written.
var errSuperseded = errors.New("vault: credential superseded")

// writeBack applies apply to the credential for server, if it still holds
// the refresh token spent, and swaps it in, reading again after each
// conflict. snap is the version to start from.
func (r *Resolver) writeBack(ctx context.Context, id, server, spent string, snap *snapshot, apply func(Credential) Credential) error {
	for {
		if snap == nil {
			var err error
			if snap, err = r.read(ctx, id); err != nil {
				return err
			}
		}
		i := snap.find(server)
		if i < 0 {
			return errSuperseded
		}
		cur := snap.creds[i]
		if cur.Type != TypeMCPOAuth || cur.Refresh == nil || cur.Refresh.RefreshToken != spent {
			return errSuperseded
		}
		_, err := r.swap(ctx, id, snap, i, apply(cur))
		if !errors.Is(err, errConflict) {
			return err
		}
		snap = nil
	}
}

// swap writes snap with credential i replaced by c as a new version and
// moves AWSCURRENT onto it from snap's version: errConflict when another
// version became current first. It returns the version written.
//
// The new version's id is derived from snap's (successorID), so a version
// has at most one successor however many writers race: a loser's put is
// refused (ResourceExistsException) and writes nothing. The loser then
// finishes the winner's move, which may have been abandoned half-way, and
// reports errConflict.
func (r *Resolver) swap(ctx context.Context, id string, snap *snapshot, i int, c Credential) (*snapshot, error) {
	raws := slices.Clone(snap.raws)
	raws[i] = encode(c)
	doc := encodeDoc(raws)
	if len(doc) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: vault %s: a refreshed credential makes it %d bytes, at most %d", ErrVaultMalformed, id, len(doc), MaxSecretBytes)
	}
	name := r.prefix + id
	version := successorID(name, snap.version)
	_, err := r.oauth.w.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(name), SecretString: aws.String(string(doc)),
		ClientRequestToken: aws.String(version), VersionStages: []string{PendingStage},
	})
	var exists *types.ResourceExistsException
	switch {
	case errors.As(err, &exists):
		if err := r.move(ctx, id, snap.version, version); err != nil {
			return nil, err
		}
		return nil, errConflict
	case err != nil:
		return nil, fmt.Errorf("vault: write vault %s (secret %s): %w", id, name, err)
	}
	if err := r.move(ctx, id, snap.version, version); err != nil {
		return nil, err
	}
	cur, err := r.read(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case cur.version != version:
		return nil, errConflict
	case !bytes.Equal(encodeDoc(cur.raws), doc):
		return nil, errConflict // another put of the same id overtook ours (moto does not lock)
	}
	creds := slices.Clone(snap.creds)
	creds[i] = c
	return &snapshot{version: version, raws: raws, creds: creds}, nil
}

// move moves AWSCURRENT from version from onto version to. It is done
// when to is current afterwards, errConflict when a third version is, and
// an error when from still is.
func (r *Resolver) move(ctx context.Context, id, from, to string) error {
	name := r.prefix + id
	_, err := r.oauth.w.UpdateSecretVersionStage(ctx, &secretsmanager.UpdateSecretVersionStageInput{
		SecretId: aws.String(name), VersionStage: aws.String("AWSCURRENT"),
		MoveToVersionId: aws.String(to), RemoveFromVersionId: aws.String(from),
	})
	if err == nil {
		return nil
	}
	// Refused because another version is current (the compare failed), or
	// a lost answer to a move that happened: the current version says.
	cur, rerr := r.read(ctx, id)
	switch {
	case rerr != nil:
		return fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
	case cur.version == to:
		return nil
	case cur.version != from:
		return errConflict
	}
	return fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
}

// successorID is the version id of the one version that may follow
// version of secret name: 64 hex digits, a valid ClientRequestToken.
func successorID(name, version string) string {
	sum := sha256.Sum256([]byte("mcpfn-vault-successor\x00" + name + "\x00" + version))
	return hex.EncodeToString(sum[:])
}
