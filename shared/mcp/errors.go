package mcp

import (
	"fmt"
	"net/http"

	"github.com/mcpfn/mcpfn/shared/text"
)

// maxChallengeBytes bounds the WWW-Authenticate value an UnauthorizedError keeps.
const maxChallengeBytes = 4 << 10

// UnauthorizedError reports an exchange the server answered 401 or 403.
// Challenge is its WWW-Authenticate value (at most 4 KiB), possibly empty.
// errors.Is(err, ErrUnauthorized) holds for it.
type UnauthorizedError struct {
	Status    int
	Challenge string
}

func (e *UnauthorizedError) Error() string {
	msg := fmt.Sprintf("%v: the server answered %d %s", ErrUnauthorized, e.Status, http.StatusText(e.Status))
	if e.Challenge != "" {
		msg += fmt.Sprintf(" (WWW-Authenticate: %s)", e.Challenge)
	}
	return msg
}

// Is reports whether target is ErrUnauthorized.
func (e *UnauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

func unauthorized(resp *http.Response) *UnauthorizedError {
	challenge := ""
	for i, v := range resp.Header.Values("WWW-Authenticate") {
		if i > 0 {
			challenge += ", "
		}
		challenge += v
	}
	return &UnauthorizedError{Status: resp.StatusCode, Challenge: text.Truncate(challenge, maxChallengeBytes)}
}
