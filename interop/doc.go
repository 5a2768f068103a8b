// Package interop tests shared/mcp against MCP peers nobody here wrote: the
// official conformance suite (through cmd/mcpfn-conformance),
// server-everything, and servers on the TypeScript SDK v1 and v2. The peers
// are npm packages pinned in package-lock.json and run on Node 22 from
// node_modules, each bound to 127.0.0.1 by js/loopback.mjs.
//
// The tests run only with MCPFN_INTEROP=1, which `make interop` sets after
// installing node_modules; plain `go test ./...` skips them.
package interop
