// Package item runs one MCP work item — connect, list every tool, call one,
// close — through either shared/mcp or the raw go-sdk v1.8.0 client, so that
// benchmarks compare the two on identical steps. It imports no AWS code, to
// keep the memory-measurement child small. Clients for loopback servers:
// mcptest.LoopbackClient.
package item

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Client names the client library a work item goes through.
type Client string

// The two clients. SDK is go-sdk's own client over
// StreamableClientTransport{DisableStandaloneSSE: true}, nothing else set.
const (
	Ours Client = "shared/mcp"
	SDK  Client = "go-sdk"
)

// Clients lists both, ours first.
var Clients = []Client{Ours, SDK}

// Steps of a work item, in order.
const (
	StepConnect = "connect"
	StepList    = "list"
	StepCall    = "call"
	StepClose   = "close"
)

// Steps lists the step names in order.
var Steps = []string{StepConnect, StepList, StepCall, StepClose}

// ErrUnexpected reports an item whose answers were not the expected ones.
var ErrUnexpected = errors.New("item: unexpected answer")

// Spec is one work item. SkipList skips the listing and Tool, when empty,
// the call. WantTools, when positive, is the number of tools the listing
// must hold. Hint and Discovery are passed to shared/mcp as
// Config.ProtocolVersion and Config.Discovery, and Stats, when set,
// receives its Stats after Close; the raw SDK ignores all three. AfterStep,
// when set, runs after each step with the step's name.
type Spec struct {
	URL        string
	HTTPClient *http.Client
	Hint       string
	Discovery  string
	Stats      func(mcp.Stats)
	SkipList   bool
	Tool       string
	Arguments  json.RawMessage
	WantText   string
	WantTools  int
	AfterStep  func(step string)
}

// Session is an open connection through either client.
type Session interface {
	// List follows pagination and returns the number of entries listed.
	List(ctx context.Context) (int, error)
	// Call calls a tool and returns the text of its first block.
	Call(ctx context.Context, name string, args json.RawMessage) (string, error)
	Close() error
}

// Connect opens a session to s.URL through c.
func Connect(ctx context.Context, c Client, s Spec) (Session, error) {
	switch c {
	case Ours:
		conn, err := mcp.Connect(ctx, mcp.Config{URL: s.URL, HTTPClient: s.HTTPClient, ProtocolVersion: s.Hint, Discovery: s.Discovery})
		if err != nil {
			return nil, err
		}
		return ours{conn}, nil
	case SDK:
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		t := &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: s.HTTPClient, DisableStandaloneSSE: true}
		cs, err := client.Connect(ctx, t, nil)
		if err != nil {
			return nil, err
		}
		return raw{cs}, nil
	}
	return nil, fmt.Errorf("item: unknown client %q", c)
}

// Run runs the work item s through c: connect, list (unless s.SkipList),
// call (unless s.Tool is empty), close. Close runs even when a step failed; the first error wins.
func Run(ctx context.Context, c Client, s Spec) (err error) {
	after := s.AfterStep
	if after == nil {
		after = func(string) {}
	}
	sess, err := Connect(ctx, c, s)
	after(StepConnect)
	if err != nil {
		return fmt.Errorf("%s: connect: %w", c, err)
	}
	defer func() {
		cerr := sess.Close()
		if o, ok := sess.(ours); ok && s.Stats != nil {
			s.Stats(o.c.Stats())
		}
		after(StepClose)
		if err == nil && cerr != nil {
			err = fmt.Errorf("%s: close: %w", c, cerr)
		}
	}()
	if !s.SkipList {
		n, err := sess.List(ctx)
		after(StepList)
		if err != nil {
			return fmt.Errorf("%s: list: %w", c, err)
		}
		if s.WantTools > 0 && n != s.WantTools {
			return fmt.Errorf("%w: %s listed %d tools, want %d", ErrUnexpected, c, n, s.WantTools)
		}
	}
	if s.Tool == "" {
		return nil
	}
	text, err := sess.Call(ctx, s.Tool, s.Arguments)
	after(StepCall)
	if err != nil {
		return fmt.Errorf("%s: call %s: %w", c, s.Tool, err)
	}
	if s.WantText != "" && text != s.WantText {
		return fmt.Errorf("%w: %s: %s answered %q, want %q", ErrUnexpected, c, s.Tool, text, s.WantText)
	}
	return nil
}

type ours struct{ c *mcp.Conn }

func (o ours) List(ctx context.Context) (int, error) {
	l, err := o.c.ListTools(ctx)
	return len(l.Tools) + len(l.Refused), err
}

func (o ours) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	res, err := o.c.CallTool(ctx, name, args)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", nil
	}
	return res.Content[0].Text, nil
}

func (o ours) Close() error { return o.c.Close() }

type raw struct{ cs *sdk.ClientSession }

func (r raw) List(ctx context.Context) (int, error) {
	n := 0
	params := &sdk.ListToolsParams{}
	for {
		res, err := r.cs.ListTools(ctx, params)
		if err != nil {
			return n, err
		}
		n += len(res.Tools)
		if res.NextCursor == "" {
			return n, nil
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

func (r raw) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	res, err := r.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", nil
	}
	if t, ok := res.Content[0].(*sdk.TextContent); ok {
		return t.Text, nil
	}
	return "", nil
}

func (r raw) Close() error { return r.cs.Close() }
