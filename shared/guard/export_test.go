package guard

import (
	"context"
	"net/http"
	"syscall"
	"time"
)

// NewClientWithDialer exposes the client constructor with an injectable
// Dialer (and so Resolver) to the external tests.
func NewClientWithDialer(d *Dialer, timeout time.Duration) *http.Client {
	return newClient(d, timeout)
}

// Control exposes the ControlContext hook the Dialer installs.
func (p *Policy) Control() func(context.Context, string, string, syscall.RawConn) error {
	return p.control
}
