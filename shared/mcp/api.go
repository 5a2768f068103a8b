package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
// listing: ErrBudgetExceeded, ErrTooManyPages and ErrCursorLoop each wrap it;
// so does ErrUndeclaredTask (tasks.go), a task answer to a call that
// declared no Tasks extension.
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
//
// Discovery optionally primes the connection: an earlier connection's
// Stats.Discovery. When it names a supported version of 2026-07-28 or
// later, Connect sends nothing (the SDK's server/discover is answered from
// it) and a call is one HTTP request; if the server then refuses that call
// as a legacy or unsupported-version server, CallTool connects again,
// unprimed, and calls once more (Stats.PrimeFallback). Anything else in
// Discovery is ignored.
//
// OAuth, when set, authorizes the requests instead of BearerToken: the
// SDK takes each request's token from its TokenSource, and on a 401 or
// 403 calls Authorize and sends that request again, once per operation
// (Connect, ListTools, CallTool). The handler's own requests are its
// client's, not this connection's (Stats). A second refusal in one
// operation, or a failed Authorize, ends it with ErrUnauthorized; the
// latter also wraps Authorize's error.
type Config struct {
	URL             string
	BearerToken     string
	OAuth           auth.OAuthHandler
	HTTPClient      *http.Client
	ProtocolVersion string
	Discovery       string
}

// MaxDiscoveryBytes bounds Stats.Discovery and Config.Discovery.
const MaxDiscoveryBytes = 16 << 10

// Tool is one accepted tool, in the shape the platform stores and hands the
// model (Anthropic tool-definition field names, snake_case for the rest).
// Name is the server's, 1-128 of A-Za-z0-9_.- (the MCP rule). Title,
// OutputSchema, Annotations and Meta are optional; schemas and Meta are
// compact JSON. ModelName is never set by this package: the catalog
// store gives each stored tool a model-safe name.
type Tool struct {
	Name         string          `json:"name"`
	ModelName    string          `json:"model_name,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
}

// Annotations are a tool's behaviour hints (MCP ToolAnnotations); a nil
// hint was not given. Other holds the annotation keys not named here (the
// annotations' own title among them) as a compact JSON object, or nil.
type Annotations struct {
	ReadOnlyHint    *bool           `json:"read_only_hint,omitempty"`
	DestructiveHint *bool           `json:"destructive_hint,omitempty"`
	IdempotentHint  *bool           `json:"idempotent_hint,omitempty"`
	OpenWorldHint   *bool           `json:"open_world_hint,omitempty"`
	Other           json.RawMessage `json:"other,omitempty"`
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

// Stats is what a connection cost so far; it is comparable. Requests
// counts every HTTP request sent, the closing DELETE included once Close
// has returned. Discovery is, for a connection at 2026-07-28 or later, the
// server/discover result (JSON) to record for priming: its version,
// capabilities and server info; empty past MaxDiscoveryBytes. Primed:
// Connect answered server/discover from Config.Discovery. PrimeFallback:
// the server refused the primed call and the Conn connected again.
type Stats struct {
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	Requests        int
	ResponseBytes   int64
	Discovery       string
	Primed          bool
	PrimeFallback   bool
}
