package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/text"
)

// DeadGrant marks an mcp_oauth credential whose refresh token the
// authorization server refused with invalid_grant or invalid_client (the
// "dead_grant" block): Error is that code, At when (to the second),
// RefreshTokenSHA256 the hex SHA-256 of the refused refresh token, never
// the token. It applies only while the credential still holds that
// refresh token: re-onboarding, or an edit with another refresh token,
// clears it. While it applies no token request is made (DESIGN.md, "A
// dead grant is remembered").
type DeadGrant struct {
	Error              string
	At                 time.Time
	RefreshTokenSHA256 string
}

// deadCodes are the OAuth error codes that end a grant for good.
var deadCodes = []string{"invalid_grant", "invalid_client"}

var (
	deadCodeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// fingerprint is the hex SHA-256 of a refresh token, as DeadGrant keeps it.
func fingerprint(refreshToken string) string {
	sum := sha256.Sum256([]byte(refreshToken))
	return hex.EncodeToString(sum[:])
}

// holds reports whether d applies to refresh block rf.
func (d *DeadGrant) holds(rf *Refresh) bool {
	return d != nil && rf != nil && d.RefreshTokenSHA256 == fingerprint(rf.RefreshToken)
}

// deadGrant returns the marker for a refresh of refreshToken that failed
// with err at now, or nil when err does not end the grant.
func deadGrant(err error, refreshToken string, now time.Time) *DeadGrant {
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Kind != oauth.KindRefused || !slices.Contains(deadCodes, oe.Code) {
		return nil
	}
	return &DeadGrant{Error: oe.Code, At: now.UTC().Truncate(time.Second), RefreshTokenSHA256: fingerprint(refreshToken)}
}

// deadErr is the error of a credential whose grant d recorded as dead: it
// names the vault, the server's origin, the token endpoint's origin and
// the recorded error, and wraps oauth.ErrRefused.
func (r *Resolver) deadErr(id, server string, rf *Refresh, d *DeadGrant) error {
	return r.credErr(id, server, &oauth.Error{Kind: oauth.KindRefused, Endpoint: "token endpoint", Origin: text.Origin(rf.TokenEndpoint), Code: d.Error,
		Detail: fmt.Sprintf("refused this credential's refresh token at %s; no token is asked for until the credential is onboarded again",
			d.At.UTC().Format(time.RFC3339))})
}

// parseDead checks a stored dead_grant block.
func parseDead(j *deadJSON) (*DeadGrant, error) {
	at, err := parseTime(j.At)
	switch {
	case !deadCodeRE.MatchString(j.Error):
		return nil, errors.New("error must be an OAuth error code")
	case err != nil || at.IsZero():
		return nil, errors.New("at must be an RFC 3339 time")
	case !sha256RE.MatchString(j.RefreshTokenSHA256):
		return nil, errors.New("refresh_token_sha256 must be 64 lower-case hex digits")
	}
	return &DeadGrant{Error: j.Error, At: at, RefreshTokenSHA256: j.RefreshTokenSHA256}, nil
}
