package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Kind classifies an OAuth failure. It prints as a word.
type Kind int

// The kinds, each with the sentinel an *Error of that kind matches with
// errors.Is and the wire type the functions map it to.
const (
	// KindRefused: the authorization server refused the client or the grant
	// (invalid_grant, invalid_client, any OAuth error code, 401/403), or an
	// expired token cannot be refreshed. ErrRefused;
	// mcp_authentication_failed_error.
	KindRefused Kind = iota + 1
	// KindUnavailable: the endpoint could not be reached or answered 5xx,
	// 408 or 429, or the budget ran out. ErrUnavailable;
	// mcp_connection_failed_error.
	KindUnavailable
	// KindProtocol: the endpoint answered unusably (not JSON, too large, no
	// challenge, missing fields, a malformed URL). ErrProtocol;
	// mcp_protocol_error.
	KindProtocol
	// KindDenied: the egress policy refuses the endpoint's address, or plain
	// http without an allow entry. ErrDenied; mcp_egress_denied_error.
	KindDenied
)

func (k Kind) String() string {
	switch k {
	case KindRefused:
		return "refused"
	case KindUnavailable:
		return "unavailable"
	case KindProtocol:
		return "protocol"
	case KindDenied:
		return "egress-denied"
	}
	return "unknown"
}

// Sentinels matched by *Error (see Kind).
var (
	ErrRefused     = errors.New("oauth: credential refused")
	ErrUnavailable = errors.New("oauth: endpoint unavailable")
	ErrProtocol    = errors.New("oauth: unusable answer")
	ErrDenied      = errors.New("oauth: endpoint refused by the egress policy")
)

func (k Kind) sentinel() error {
	switch k {
	case KindRefused:
		return ErrRefused
	case KindUnavailable:
		return ErrUnavailable
	case KindProtocol:
		return ErrProtocol
	case KindDenied:
		return ErrDenied
	}
	return nil
}

// Error is every failure of this package. Its message names the endpoint
// and its origin (scheme://host[:port]) and never a path, a query, a token
// or text the server sent, except a well-formed OAuth error code. It
// matches its Kind's sentinel and unwraps to a *guard.DeniedError or a
// context error when one caused it.
type Error struct {
	Kind     Kind
	Endpoint string // what was asked: "token endpoint", "protected-resource metadata", …
	Origin   string // the endpoint's origin; empty when unknown
	Code     string // the OAuth error code (e.g. "invalid_grant"), if any
	Detail   string // what went wrong, in our words
	cause    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("oauth: ")
	if e.Endpoint != "" {
		b.WriteString(e.Endpoint)
		if e.Origin != "" {
			b.WriteString(" " + e.Origin)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	return b.String()
}

// Is matches the sentinel of e.Kind.
func (e *Error) Is(target error) bool { return target != nil && target == e.Kind.sentinel() }

// WireType is the wire type the functions report e with (see Kind).
func (e *Error) WireType() wire.ErrorType {
	switch e.Kind {
	case KindRefused:
		return wire.AuthenticationFailed
	case KindUnavailable:
		return wire.ConnectionFailed
	case KindProtocol:
		return wire.ProtocolError
	case KindDenied:
		return wire.EgressDenied
	}
	return ""
}

// Unwrap returns the guard refusal or context error that caused e, or nil.
func (e *Error) Unwrap() error { return e.cause }

// Errorf returns an *Error of kind k about nothing in particular (for
// callers reporting a credential's own state).
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

var codeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// safeCode returns code when it looks like an OAuth error code, else "".
func safeCode(code string) string {
	if codeRE.MatchString(code) {
		return code
	}
	return ""
}

// transportError classifies a failed HTTP exchange with endpoint at raw.
// denied is a refusal the recording transport saw (the SDK may flatten it).
func transportError(ctx context.Context, endpoint, raw string, err error, denied *guard.DeniedError) *Error {
	e := &Error{Endpoint: endpoint, Origin: text.Origin(raw)}
	var d *guard.DeniedError
	switch {
	case denied != nil:
		e.Kind, e.cause, e.Detail = KindDenied, denied, denied.Error()
	case errors.As(err, &d):
		e.Kind, e.cause, e.Detail = KindDenied, d, d.Error()
	case errors.Is(err, guard.ErrRedirect):
		e.Kind, e.Detail = KindUnavailable, "answered with a redirect, which is not followed"
	case ctx.Err() != nil:
		e.Kind, e.cause, e.Detail = KindUnavailable, ctx.Err(), "no answer within the budget"
	case isTimeout(err):
		e.Kind, e.cause, e.Detail = KindUnavailable, context.DeadlineExceeded, "no answer within the request timeout"
	default:
		e.Kind, e.Detail = KindUnavailable, "could not be reached: "+netReason(err)
	}
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// netReason describes a network error without the request URL.
func netReason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return "transport error"
}

// tokenError classifies a failed token request from x/oauth2.
func tokenError(ctx context.Context, raw string, err error, denied *guard.DeniedError) *Error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		var ue *url.Error
		switch {
		case denied != nil, errors.As(err, &ue), ctx.Err() != nil, isTimeout(err),
			strings.HasPrefix(err.Error(), "oauth2: cannot fetch token"): // a body read failed (x/oauth2 flattens it)
			return transportError(ctx, "token endpoint", raw, err, denied)
		}
		return &Error{Kind: KindProtocol, Endpoint: "token endpoint", Origin: text.Origin(raw),
			Detail: "answered with no usable token (not JSON, over 1 MiB, or no access_token)"}
	}
	e := &Error{Endpoint: "token endpoint", Origin: text.Origin(raw), Code: safeCode(re.ErrorCode)}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	switch {
	case status >= 500, status == 408, status == 429:
		e.Kind, e.Detail = KindUnavailable, fmt.Sprintf("answered HTTP %d", status)
	case re.ErrorCode != "", status == 401, status == 403:
		e.Kind, e.Detail = KindRefused, fmt.Sprintf("refused the request (HTTP %d)", status)
	default:
		e.Kind, e.Detail = KindProtocol, fmt.Sprintf("answered HTTP %d without an OAuth error", status)
	}
	return e
}
