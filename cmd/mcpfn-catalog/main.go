// Command mcpfn-catalog prints a stored tool catalog for operators and
// platforms to script against: the whole catalog (get) or its tools in the
// Anthropic Messages API shape (tools). Output shapes: docs/contract.md.
//
// Usage (flags before the ID):
//
//	mcpfn-catalog get [--table T [--endpoint URL] | --dir D] [--timeout 30s] ID
//	mcpfn-catalog tools [store flags] [--format anthropic] [--allow GLOB]... [--deny GLOB]... [--read-only] ID
//
// Without --table or --dir it reads MCPFN_CATALOG_TABLE, then
// MCPFN_CATALOG_DIR. AWS clients use the default configuration, as the
// functions do. Exit status: 0 printed, 1 not found or the store failed,
// 2 usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
