// Package vault finds the bearer token for an MCP server in vaults: Secrets
// Manager secrets named <prefix><vault id>, each holding JSON credentials:
//
//	{"credentials": [
//	  {"server_url": "https://mcp.example.com/mcp", "token": "..."}
//	]}
//
// The object is the only accepted shape; unknown fields, a missing or
// unusable server_url and an empty token make the vault malformed. A
// credential applies to a server when both URLs are equal after
// NormalizeURL. Rationale: DESIGN.md.
package vault
