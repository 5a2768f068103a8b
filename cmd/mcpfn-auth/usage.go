package main

import (
	"flag"
	"fmt"
	"io"
)

const usageHead = `Usage:
  mcpfn-auth -vault ID [flags] SERVER_URL
  mcpfn-auth -h

Onboards an MCP server that authorizes with OAuth: runs the authorization-code
flow in your browser, lists the server's tools with the new token, and writes
the vault's mcp_oauth credential to Secrets Manager (<prefix><vault id>) or,
with -file, to a local JSON file. Flags come before SERVER_URL.

Flags:
`

const exitStatuses = `
Exit status:
  0  the credential is written (or -h)
  1  the authorization flow, the listing or the write failed
  2  bad usage
  3  the vault store cannot be used: no AWS region
`

// printUsage writes the usage, fs's flags and the exit statuses to w.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageHead)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, exitStatuses)
}
