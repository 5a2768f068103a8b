// Package wire is the error taxonomy callers see: the six wire types, the
// *Error that carries one with a caller-facing message and a logged cause,
// ClassifyMCP for errors from package mcp, and CheckServerURL, which tells
// a malformed server URL (InvalidRequest) from one the egress policy
// refuses (EgressDenied). docs/errors.md is the contract.
package wire
