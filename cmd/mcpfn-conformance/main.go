// Command mcpfn-conformance is the client the MCP conformance suite drives:
// it runs one client scenario through shared/mcp against the mock server URL
// given as its last argument. See docs/conformance.md.
//
// Usage: mcpfn-conformance URL
//
// Environment: MCP_CONFORMANCE_SCENARIO (required), MCP_CONFORMANCE_CONTEXT
// (optional JSON), MCPFN_CONFORMANCE_BEARER_TOKEN (optional static token).
// Exit status: 0 scenario done, 1 scenario failed, 2 usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
