package vault

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
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
func (r *Resolver) swap(ctx context.Context, id string, snap *snapshot, i int, c Credential) (*snapshot, error) {
	raws := slices.Clone(snap.raws)
	raws[i] = encode(c)
	doc := encodeDoc(raws)
	if len(doc) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: vault %s: a refreshed credential makes it %d bytes, at most %d", ErrVaultMalformed, id, len(doc), MaxSecretBytes)
	}
	name := r.prefix + id
	put, err := r.oauth.w.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(name), SecretString: aws.String(string(doc)),
		ClientRequestToken: aws.String(randomHex(16)), VersionStages: []string{PendingStage},
	})
	if err != nil {
		return nil, fmt.Errorf("vault: write vault %s (secret %s): %w", id, name, err)
	}
	version := aws.ToString(put.VersionId)
	_, err = r.oauth.w.UpdateSecretVersionStage(ctx, &secretsmanager.UpdateSecretVersionStageInput{
		SecretId: aws.String(name), VersionStage: aws.String("AWSCURRENT"),
		MoveToVersionId: aws.String(version), RemoveFromVersionId: aws.String(snap.version),
	})
	if err != nil {
		// Refused because another version is current (the compare failed),
		// or a lost answer to a move that happened: the current version says.
		cur, rerr := r.read(ctx, id)
		switch {
		case rerr != nil:
			return nil, fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
		case cur.version == version:
		case cur.version != snap.version:
			return nil, errConflict
		default:
			return nil, fmt.Errorf("vault: swap vault %s (secret %s): %w", id, name, err)
		}
	}
	creds := slices.Clone(snap.creds)
	creds[i] = c
	return &snapshot{version: version, raws: raws, creds: creds}, nil
}
