package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

func TestClassifyMCP(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ErrorType
	}{
		{"nil", nil, ""},
		{"unauthorized", fmt.Errorf("connect: %w", mcp.ErrUnauthorized), AuthenticationFailed},
		// A 401 during a call the server answered is still an authentication failure.
		{"unauthorized before server answered", fmt.Errorf("%w: %w", mcp.ErrServerAnswered, mcp.ErrUnauthorized), AuthenticationFailed},
		{"denied", &guard.DeniedError{Network: "tcp4", Addr: "127.0.0.1", Port: 1, Reason: guard.ReasonLoopback}, EgressDenied},
		{"bad url", fmt.Errorf("%w: no host", guard.ErrBadURL), InvalidRequest},
		{"redirect", fmt.Errorf("Post: %w: 307 to https://x/", guard.ErrRedirect), ConnectionFailed},
		{"cursor loop wrapping protocol", fmt.Errorf("%w: %w", mcp.ErrProtocol, mcp.ErrCursorLoop), ProtocolError},
		{"server answered", fmt.Errorf("list: %w", mcp.ErrServerAnswered), ProtocolError},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), ConnectionFailed},
		{"anything else", errors.New("connection reset by peer"), ConnectionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyMCP(tt.err); got != tt.want {
				t.Errorf("ClassifyMCP(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestTypeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ErrorType
	}{
		{"nil", nil, ""},
		{"typed", Errorf(EgressDenied, nil, "x"), EgressDenied},
		{"wrapped typed", fmt.Errorf("outer: %w", Errorf(AuthenticationFailed, nil, "x")), AuthenticationFailed},
		{"joined", errors.Join(Errorf(ProtocolError, nil, "x"), errors.New("report")), ProtocolError},
		{"untyped", errors.New("boom"), Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TypeOf(tt.err); got != tt.want {
				t.Errorf("TypeOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	want := map[ErrorType]bool{
		InvalidRequest: true, EgressDenied: true, AuthenticationFailed: true,
		ConnectionFailed: false, ProtocolError: false, Internal: false, ToolNotPermitted: true,
	}
	for _, et := range ErrorTypes {
		if got := et.Permanent(); got != want[et] {
			t.Errorf("%s.Permanent() = %t, want %t", et, got, want[et])
		}
	}
}

func TestPermanentError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"permanent type", Errorf(EgressDenied, nil, "x"), true},
		{"retryable type", Errorf(ConnectionFailed, nil, "x"), false},
		{"retryable type marked final", &Error{Type: ConnectionFailed, Message: "x", Final: true}, true},
		{"untyped", errors.New("x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Permanent(tt.err); got != tt.want {
				t.Errorf("Permanent = %t, want %t", got, tt.want)
			}
		})
	}
}
