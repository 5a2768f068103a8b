// Command mcpfn-auth onboards an MCP server that authorizes with OAuth: an
// operator runs it once per server and vault. It runs the MCP
// authorization-code flow (shared/onboard) with a loopback redirect and the
// operator's browser, checks the token by listing the server's tools, and
// writes or updates the server's mcp_oauth credential in the vault: the
// Secrets Manager secret <prefix><vault id>, or a local JSON file.
//
// Usage: mcpfn-auth -vault ID [flags] SERVER_URL (mcpfn-auth -h lists the
// flags). Exit status: 0 written (or -h), 1 the flow, listing or write
// failed, 2 usage, 3 the vault store cannot be used (no AWS region). Every
// failure is one line on stderr.
//
// Every request goes through the egress guard (MCPFN_EGRESS_ALLOW adds to
// its allow list, as for the functions). See README.md and
// docs/operations.md ("Onboarding an OAuth server").
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
