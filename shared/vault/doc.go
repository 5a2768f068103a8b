// Package vault finds the credential for an MCP server in vaults: Secrets
// Manager secrets named <prefix><vault id>, each holding JSON credentials:
//
//	{"credentials": [
//	  {"server_url": "https://mcp.example.com/mcp", "token": "..."},
//	  {"type": "mcp_oauth", "server_url": "...", "access_token": "...",
//	   "expires_at": "2026-12-01T12:00:00Z", "refresh": {...}},
//	  {"type": "oauth_client_credentials", "server_url": "...",
//	   "client_id": "...", "client_secret": "..."}
//	]}
//
// The object is the only accepted shape (docs/contract.md, "Credentials");
// field names match case for case, and unknown or repeated fields, a
// missing or unusable server_url and an empty token make the vault
// malformed. A credential applies to a server when both URLs are equal
// after NormalizeURL.
//
// With WithOAuth, Lookup refreshes an mcp_oauth token expiring within
// RefreshMargin (one refresher across all instances, the result stored
// before use) and obtains client-credentials tokens through package oauth,
// cached in process; Refresh handles a token the server refused. A grant
// the authorization server refused (invalid_grant, invalid_client) is
// recorded in the credential (DeadGrant) and not tried again until the
// refresh token changes. Rationale: DESIGN.md.
package vault
