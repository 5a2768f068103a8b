// Package mcpfixture serves go-sdk MCP servers with a fixed set of tools,
// for local runs (cmd/localrun) and tests (through shared/mcp/mcptest) of
// code that speaks to MCP servers. It links no testing package.
//
// Tools: echo, add, fail, image, audio, slow, link, resource, pdf and
// everything (one block of every content type). echo has a title; add has
// a title, an output schema, annotations (read-only, idempotent, closed
// world, titled) and _meta; fail is annotated as not destructive. A
// server counts HTTP requests, the JSON-RPC methods it was sent, and
// tool executions.
package mcpfixture

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// Name and Version are the server's reported implementation.
const (
	Name    = "mcptest"
	Version = "1.0.0"
)

// Options selects the server's behaviour. The zero value is a stateful
// server (legacy negotiation, 2025-11-25) with no authentication, one page
// of tools and no filler tools.
type Options struct {
	// Stateless serves the 2026-07-28 revision (server/discover); a
	// stateful server answers legacy initialize only.
	Stateless bool
	// BearerToken, when set, is required: 401 without an Authorization
	// header, 403 with a wrong one. Both carry a WWW-Authenticate challenge.
	BearerToken string
	// PageSize paginates tools/list; 0 uses go-sdk's default (1000).
	PageSize int
	// ExtraTools adds that many realistic filler tools (filler_001, ...).
	ExtraTools int
	// Tasks, when set, serves the Tasks-extension tools (task_sleep, ...,
	// ask_twice) from that state; it needs Stateless.
	Tasks *Tasks
}

// Challenge is the WWW-Authenticate value sent with 401 and 403.
const Challenge = `Bearer realm="mcptest", error="invalid_token"`

// PNG is the image the image tool returns: a 1x1 transparent PNG.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d,
	0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
	0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00,
	0x00, 0x05, 0x00, 0x01, 0x7a, 0x5e, 0xab, 0x3f, 0x00, 0x00, 0x00, 0x00,
	0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

// WAV is the audio the audio tool returns: an empty 8 kHz mono WAV header.
var WAV = []byte("RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00\x01\x00\x08\x00data\x00\x00\x00\x00")

// PDF is the blob the pdf tool embeds.
var PDF = []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")

// Counters records what a handler was sent. It is safe for concurrent use.
type Counters struct {
	mu       sync.Mutex
	requests int
	methods  []string
	calls    map[string]int
	traces   []Trace
}

func (c *Counters) request(method string, tr Trace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.methods = append(c.methods, method)
	tr.Method = method
	c.traces = append(c.traces, tr)
}

func (c *Counters) ran(tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[tool]++
}

// NewHandler returns an MCP Streamable HTTP handler serving opts, and the
// counters it updates. It is what mcptest.NewServer serves, for a binary that
// listens itself; mount it at any path.
func NewHandler(opts Options) (http.Handler, *Counters) {
	h, counters, _ := NewHandlerAndServer(opts)
	return h, counters
}

// NewHandlerAndServer is NewHandler with the go-sdk server behind the
// handler, whose sessions a caller closes when it stops serving.
func NewHandlerAndServer(opts Options) (http.Handler, *Counters, *mcp.Server) {
	counters := &Counters{}
	server := newMCPServer(opts, counters)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: opts.Stateless})
	if opts.Tasks != nil {
		h = opts.Tasks.wrap(h)
	}
	return countAndAuth(h, counters, opts.BearerToken), counters, server
}

// LoopbackClient returns a guarded client (guard.NewClientWithPolicy) that
// may dial only the loopback host and port of rawURL.
func LoopbackClient(rawURL string, timeout time.Duration) (*http.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("mcptest: %s is not an IP:port URL: %w", rawURL, err)
	}
	if !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("mcptest: %s is not a loopback address", ap.Addr())
	}
	entry := fmt.Sprintf("%s/%d:%d", ap.Addr(), ap.Addr().BitLen(), ap.Port())
	if ap.Addr().Is6() {
		entry = fmt.Sprintf("[%s/128]:%d", ap.Addr(), ap.Port())
	}
	p, err := guard.NewPolicy(entry)
	if err != nil {
		return nil, err
	}
	return guard.NewClientWithPolicy(p, timeout), nil
}

// Method reports what r asks for: the JSON-RPC method of a POST (its body
// is read, up to 8 MiB, and restored for the next handler), else the HTTP
// method. An unreadable body is an error.
func Method(r *http.Request) (string, error) {
	m, _, err := read(r)
	return m, err
}

func countAndAuth(next http.Handler, c *Counters, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, tr, err := read(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.request(method, tr)
		if token != "" {
			got := r.Header.Get("Authorization")
			switch {
			case got == "":
				w.Header().Set("WWW-Authenticate", Challenge)
				http.Error(w, "missing bearer token", http.StatusUnauthorized)
				return
			case subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1:
				w.Header().Set("WWW-Authenticate", Challenge)
				http.Error(w, "wrong bearer token", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func newMCPServer(opts Options, c *Counters) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: Version},
		&mcp.ServerOptions{PageSize: opts.PageSize})
	for _, t := range tools() {
		s.AddTool(t.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.ran(t.tool.Name)
			return t.run(ctx, req.Params.Arguments)
		})
	}
	if opts.Tasks != nil {
		addTaskTools(s, c)
	}
	for i := 1; i <= opts.ExtraTools; i++ {
		t := filler(i)
		s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.ran(t.Name)
			return text(t.Name + " ran"), nil
		})
	}
	return s
}

type fixtureTool struct {
	tool *mcp.Tool
	run  func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

const noArgs = `{"type":"object","properties":{}}`

var no = false

func tools() []fixtureTool {
	return []fixtureTool{
		{
			tool: &mcp.Tool{Name: "echo", Title: "Echo", Description: "Returns its text argument unchanged.",
				InputSchema: schema(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			run: func(_ context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
				var args struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal(raw, &args); err != nil {
					return nil, err
				}
				return text(args.Text), nil
			},
		},
		{
			tool: &mcp.Tool{Name: "add", Title: "Add", Description: "Adds two numbers; returns the sum as text and as structuredContent {\"sum\": n}.",
				InputSchema:  schema(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
				OutputSchema: schema(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`),
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no, Title: "Add two numbers"},
				Meta:         mcp.Meta{"io.mcpfn.mcptest/kind": "arithmetic"}},
			run: func(_ context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
				var args struct{ A, B float64 }
				if err := json.Unmarshal(raw, &args); err != nil {
					return nil, err
				}
				sum := args.A + args.B
				res := text(fmt.Sprint(sum))
				res.StructuredContent = map[string]any{"sum": sum}
				return res, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "fail", Description: "Always fails as a tool (isError: true).",
				InputSchema: schema(noArgs), Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				res := text("the tool failed on purpose")
				res.IsError = true
				return res, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "image", Description: "Returns a 1x1 PNG.", InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: PNG, MIMEType: "image/png"}}}, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "audio", Description: "Returns a short WAV.", InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: WAV, MIMEType: "audio/wav"}}}, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "slow", Description: "Sleeps ms milliseconds (stops early when cancelled), then answers \"done\".",
				InputSchema: schema(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`)},
			run: func(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
				var args struct {
					MS int64 `json:"ms"`
				}
				if err := json.Unmarshal(raw, &args); err != nil {
					return nil, err
				}
				t := time.NewTimer(time.Duration(args.MS) * time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return text("done"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		},
		{
			tool: &mcp.Tool{Name: "link", Description: "Returns a resource_link block.", InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{linkBlock()}}, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "resource", Description: "Returns an embedded text resource.", InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{textResourceBlock()}}, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "pdf", Description: "Returns an embedded PDF blob resource.", InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{pdfBlock()}}, nil
			},
		},
		{
			tool: &mcp.Tool{Name: "everything", Description: "Returns one block of each content type, in the order text, image, audio, resource_link, resource (text), resource (blob).",
				InputSchema: schema(noArgs)},
			run: func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.TextContent{Text: "hello"},
					&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
					&mcp.AudioContent{Data: WAV, MIMEType: "audio/wav"},
					linkBlock(),
					textResourceBlock(),
					pdfBlock(),
				}}, nil
			},
		},
	}
}

func linkBlock() *mcp.ResourceLink {
	return &mcp.ResourceLink{URI: "file:///report.csv", Name: "report.csv", MIMEType: "text/csv"}
}

func textResourceBlock() *mcp.EmbeddedResource {
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"}}
}

func pdfBlock() *mcp.EmbeddedResource {
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///doc.pdf", MIMEType: "application/pdf", Blob: PDF}}
}

var fillerTopics = []string{"invoice", "customer", "shipment", "ticket", "report", "calendar", "inventory", "payment"}

// filler returns a plausible tool with a mid-sized schema, so listings
// have realistic bytes per entry.
func filler(i int) *mcp.Tool {
	topic := fillerTopics[i%len(fillerTopics)]
	return &mcp.Tool{
		Name: fmt.Sprintf("filler_%03d", i),
		Description: fmt.Sprintf("Looks up a %s record by id and returns its fields. "+
			"Use it when the user names a specific %s; it does not search.", topic, topic),
		InputSchema: schema(fmt.Sprintf(`{"type":"object","properties":{`+
			`"id":{"type":"string","description":"The %s id, e.g. %s-1234."},`+
			`"fields":{"type":"array","items":{"type":"string"},"description":"Fields to return; all when empty."},`+
			`"include_archived":{"type":"boolean","default":false}},"required":["id"]}`, topic, topic)),
	}
}
