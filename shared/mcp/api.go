package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Budgets for one connection. DialTimeout also caps each request made
// through DefaultClient; CallTimeout caps each request through CallClient.
const (
	DialTimeout = 30 * time.Second
	ListTimeout = 2 * time.Minute
	CallTimeout = 2 * time.Minute
)

// MaxResponseBytes is the cumulative budget for everything one connection
// receives: bodies in full and header blocks as far as they can be counted.
const MaxResponseBytes = 8 << 20

// MaxDecodedCost bounds what the SDK may allocate decoding one
// connection's messages. Before the SDK decodes a JSON body or an SSE
// event's data, its estimated decoded size (its bytes, plus a weight per
// object, array and value, measured against the SDK's decoder) is charged
// against this cumulative budget; past it, the operation fails with an
// error wrapping ErrBudgetExceeded and the connection sends nothing more.
// A near-budget listing of ordinary tools costs about 3.3 times its bytes.
const MaxDecodedCost = 7 * MaxResponseBytes / 2

// Sentinels. Every error from a call the server answered wraps
// ErrServerAnswered; every 401/403 wraps ErrUnauthorized (see
// UnauthorizedError). ErrProtocol is wrapped by every unusable answer from a
// listing: ErrBudgetExceeded, ErrTooManyPages and ErrCursorLoop each wrap it.
// ErrNotConnected is a ListTools or CallTool on a Conn that Connect did not
// return (nil or the zero value); nothing was sent.
var (
	ErrServerAnswered = errors.New("mcp: the server answered, refusing the call")
	ErrUnauthorized   = errors.New("mcp: unauthorized")
	ErrProtocol       = errors.New("mcp: protocol error")
	ErrBudgetExceeded = errors.New("mcp: response budget exceeded")
	ErrTooManyPages   = errors.New("mcp: too many tool pages")
	ErrCursorLoop     = errors.New("mcp: tool listing cursor repeated")
	ErrNotConnected   = errors.New("mcp: not connected")
)

// Config describes one MCP server connection. A nil HTTPClient selects
// DefaultClient. ProtocolVersion is an optional hint: a version this server
// negotiated before; a wrong hint still connects.
type Config struct {
	URL             string
	BearerToken     string
	HTTPClient      *http.Client
	ProtocolVersion string
}

// Tool is one accepted tool, in the shape the platform stores and hands the
// model (Anthropic tool-definition field names).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Refusal is one listed entry that was not accepted, with the reason.
type Refusal struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Listing is every entry a server listed: each either accepted or refused.
type Listing struct {
	Tools   []Tool
	Refused []Refusal
}

// Content is one block of a tool's answer. Type is one of "text", "image",
// "audio", "resource" or "resource_link"; Data is already base64-decoded.
type Content struct {
	Type     string
	Text     string
	Data     []byte
	MIMEType string
	URI      string
}

// CallResult is one tool call's answer. IsError is the tool's own verdict.
// Structured is the structuredContent value, re-marshaled, or nil.
type CallResult struct {
	Content    []Content
	IsError    bool
	Structured json.RawMessage
}

// Stats is what a connection cost so far.
type Stats struct {
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	Requests        int
	ResponseBytes   int64
}
