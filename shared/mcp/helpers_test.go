package mcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// testCtx returns a context that ends well before the test's deadline.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// loopback returns a guarded client that may reach rawURL's loopback port.
func loopback(t *testing.T, rawURL string, timeout time.Duration) *http.Client {
	t.Helper()
	c, err := mcptest.LoopbackClient(rawURL, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func mustConnect(t *testing.T, cfg Config) *Conn {
	t.Helper()
	c, err := Connect(testCtx(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
