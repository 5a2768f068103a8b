// Package mcp is the platform's MCP client: a bounded wrapper over go-sdk
// v1.8.0 that connects to one server over Streamable HTTP, lists its tools
// and calls one, then closes. One SDK type appears in its API:
// Config.OAuth is go-sdk's auth.OAuthHandler, because the SDK's transport
// calls that handler itself (TokenSource per request, Authorize on a 401
// or 403); wrapping it would only copy its two methods. Every other type
// in the API is this package's own.
//
// Every connection is bounded whatever client carries it: a cumulative
// MaxResponseBytes budget charged before the SDK reads a body, a fallback
// DialTimeout on requests without a deadline, aggregate ListTimeout and
// CallTimeout, at most 100 tool pages, and a Close that returns, with
// nothing of the connection left running, within about a second.
//
// Errors are classified by what was observed on the wire, not by the SDK's
// messages: ErrUnauthorized (401/403), ErrProtocol (an unusable answer to a
// handshake or listing), ErrServerAnswered (an unusable answer to a call),
// the guard's ErrBadURL/ErrDenied/ErrRedirect, and otherwise a failed
// connection, with context and network errors left visible to errors.Is.
//
// DESIGN.md gives the rationale and the go-sdk behaviour each bound relies on.
package mcp
