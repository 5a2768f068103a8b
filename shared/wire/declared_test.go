package wire_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/wire"
)

func TestClassifyConnect(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want wire.ErrorType
	}{
		{"refused grant in an Authorize", fmt.Errorf("%w: %w", mcp.ErrUnauthorized, oauth.Errorf(oauth.KindRefused, "invalid_grant")), wire.AuthenticationFailed},
		{"token endpoint down", fmt.Errorf("refresh: %w", oauth.Errorf(oauth.KindUnavailable, "503")), wire.ConnectionFailed},
		{"unusable answer", oauth.Errorf(oauth.KindProtocol, "not JSON"), wire.ProtocolError},
		{"endpoint denied", oauth.Errorf(oauth.KindDenied, "metadata address"), wire.EgressDenied},
		{"no OAuth failure", mcp.ErrUnauthorized, wire.AuthenticationFailed},
		{"network", errors.New("connection reset"), wire.ConnectionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wire.ClassifyConnect(tt.err); got != tt.want {
				t.Errorf("ClassifyConnect(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	if got := wire.DeclaredType(errors.New("plain")); got != "" {
		t.Errorf("DeclaredType(plain) = %q, want \"\"", got)
	}
}
