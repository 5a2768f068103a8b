package wire

import (
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// ErrorType is a wire error type: the Lambda errorType of a direct
// invocation, the error of SendTaskFailure, and error_type in logs.
type ErrorType string

// The wire error types (docs/errors.md).
const (
	InvalidRequest       ErrorType = "invalid_request_error"
	EgressDenied         ErrorType = "mcp_egress_denied_error"
	ConnectionFailed     ErrorType = "mcp_connection_failed_error"
	AuthenticationFailed ErrorType = "mcp_authentication_failed_error"
	ProtocolError        ErrorType = "mcp_protocol_error"
	ToolNotPermitted     ErrorType = "mcp_tool_not_permitted_error" // the catalog's policy or quarantine refuses the tool
	Internal             ErrorType = "internal_error"
)

// ErrorTypes lists every wire type, in documentation order.
var ErrorTypes = []ErrorType{InvalidRequest, EgressDenied, ConnectionFailed, AuthenticationFailed, ProtocolError, ToolNotPermitted, Internal}

// Permanent reports whether retrying the same request cannot succeed until
// someone changes the request, the allow-list, the vault or the catalog's
// policy. Permanent
// failures without a task token go to the dead-letter queue.
func (t ErrorType) Permanent() bool {
	switch t {
	case InvalidRequest, EgressDenied, AuthenticationFailed, ToolNotPermitted:
		return true
	}
	return false
}

// Error is a failure with its wire type. Message is what the caller sees;
// Err, the cause, is logged and never sent to the caller.
//   - Final marks an error no retry can change whatever its type (an
//     outcome replayed from the idempotency ledger); it is handled as
//     permanent.
//   - Requeue marks a delivery that must come back later and report
//     nothing (a duplicate whose first delivery still runs): a record
//     returns to the queue even with a task token; a direct request fails
//     without reporting to its task.
type Error struct {
	Type    ErrorType
	Message string
	Err     error
	Final   bool
	Requeue bool
}

// Errorf returns an *Error of type t with a formatted message and cause.
func Errorf(t ErrorType, cause error, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...), Err: cause}
}

func (e *Error) Error() string {
	if e.Err == nil {
		return string(e.Type) + ": " + e.Message
	}
	return string(e.Type) + ": " + e.Message + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TypeOf is the wire type of err: the Type of the first *Error in its chain,
// else Internal. A nil err has no type.
func TypeOf(err error) ErrorType {
	if err == nil {
		return ""
	}
	var we *Error
	if errors.As(err, &we) {
		return we.Type
	}
	return Internal
}

// Permanent reports whether err is a permanent failure: its type is
// permanent or it is marked Final.
func Permanent(err error) bool {
	var we *Error
	if errors.As(err, &we) && we.Final {
		return true
	}
	return TypeOf(err).Permanent()
}

// mustRequeue reports whether err is an *Error marked Requeue.
func MustRequeue(err error) bool {
	var we *Error
	return errors.As(err, &we) && we.Requeue
}

// ClassifyMCP maps an error from connecting to or talking with an MCP
// server. Checked in order: ErrUnauthorized, the guard's refusals, a bad
// URL, ErrProtocol and ErrServerAnswered; everything else (network, TLS,
// timeouts, redirects, other HTTP statuses) is ConnectionFailed. A call
// handles ErrServerAnswered itself before asking.
func ClassifyMCP(err error) ErrorType {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, mcp.ErrUnauthorized):
		return AuthenticationFailed
	case errors.Is(err, guard.ErrDenied):
		return EgressDenied
	case errors.Is(err, guard.ErrBadURL):
		return InvalidRequest
	case errors.Is(err, mcp.ErrProtocol), errors.Is(err, mcp.ErrServerAnswered):
		return ProtocolError
	}
	return ConnectionFailed
}
