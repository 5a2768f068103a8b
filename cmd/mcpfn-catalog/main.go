// Command mcpfn-catalog prints stored tool catalogs for operators and
// platforms to script against: every catalog's head and schedule (list),
// one catalog (get), its tools in the Anthropic Messages API shape
// (tools), or its current version's diff (changes). Output shapes:
// docs/contract.md.
//
// Usage (flags before the ID; -h on any command prints its usage):
//
//	mcpfn-catalog list    [--table T [--endpoint URL]] [--timeout 5s]
//	mcpfn-catalog get     [--table T [--endpoint URL] | --dir D] [--timeout 5s] ID
//	mcpfn-catalog tools   [store flags] [--format anthropic] [--allow GLOB]... [--deny GLOB]... [--read-only] ID
//	mcpfn-catalog changes [store flags] ID
//
// Without --table or --dir it reads MCPFN_CATALOG_TABLE, then
// MCPFN_CATALOG_DIR. AWS clients use the default configuration, as the
// functions do. Exit status: 0 printed (or -h), 1 the catalog is not
// found, 2 usage, 3 the store cannot be read (a missing table, no region,
// no answer within --timeout). Every failure is one line on stderr.
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
