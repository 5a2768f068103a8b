package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/shared/text"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// errNotObject reports arguments that are not a JSON object.
var errNotObject = errors.New("mcp: arguments are not a JSON object")

// CallTool runs the named tool within CallTimeout and ctx. arguments go out
// as given (whitespace compacted); empty, nil or null go out as {}. A tool
// that failed on its own terms is a result with IsError. Errors wrap
// ErrServerAnswered when the server answered unusably (a JSON-RPC error, an
// unreadable result, a request for input, blocks all of types a tool result
// cannot carry), else ErrUnauthorized, guard errors, ErrBudgetExceeded,
// ErrNotConnected, or a network error or deadline. On a primed Conn that
// the server refuses as a legacy server, it connects again and calls once
// more, within the same budget (see Config.Discovery).
func (c *Conn) CallTool(ctx context.Context, name string, arguments json.RawMessage) (*CallResult, error) {
	if c == nil || c.cs == nil {
		return nil, fmt.Errorf("mcp: call %q: %w: the Conn did not come from Connect", text.Truncate(name, 128), ErrNotConnected)
	}
	var args any // an untyped nil is what the SDK sends as {}
	if trimmed := bytes.TrimSpace(arguments); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || !json.Valid(trimmed) {
			return nil, fmt.Errorf("mcp: call %q: %w", text.Truncate(name, 128), errNotObject)
		}
		args = json.RawMessage(trimmed)
	}

	ctx, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	what := fmt.Sprintf("call %q", text.Truncate(name, 128))
	res, err := c.call(ctx, what, name, args)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return nil, fmt.Errorf("mcp: %s: %w: the server asked for input (input_required) and this client has none to give", what, ErrServerAnswered)
	}
	return convert(what, res)
}

// convert turns the SDK's decoded tool result into a CallResult; the one
// rendering every tool answer goes through, synchronous or from a task.
func convert(what string, res *sdk.CallToolResult) (*CallResult, error) {
	out := &CallResult{IsError: res.IsError}
	for _, block := range res.Content {
		cont, keep, err := content(block)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, err)
		}
		if keep {
			out.Content = append(out.Content, cont)
		}
	}
	if len(res.Content) > 0 && len(out.Content) == 0 {
		return nil, fmt.Errorf("mcp: %s: %w: every content block is of a type a tool result cannot carry", what, ErrServerAnswered)
	}
	if res.StructuredContent != nil {
		s, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w: structuredContent does not re-marshal: %w", what, ErrServerAnswered, err)
		}
		out.Structured = s
	}
	return out, nil
}

// call sends one tools/call, and sends it again after connecting unprimed
// when the primed one was refused (unprime). Each attempt gets its own
// params: the SDK adds the session's _meta to them.
func (c *Conn) call(ctx context.Context, what, name string, args any) (*sdk.CallToolResult, error) {
	octx, op, done := c.begin(ctx)
	res, err := c.cs.CallTool(octx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		err = c.undeclaredTask(what, op)
		done()
		return res, err
	}
	again, cerr := c.unprime(octx, op)
	err = c.fail(octx, op, what, ErrServerAnswered, err)
	done()
	switch {
	case cerr != nil:
		return nil, fmt.Errorf("%w (connecting again, unprimed, after: %v)", cerr, err)
	case !again:
		return nil, err
	}
	octx, op, done = c.begin(ctx)
	defer done()
	if res, err = c.cs.CallTool(octx, &sdk.CallToolParams{Name: name, Arguments: args}); err != nil {
		return nil, c.fail(octx, op, what, ErrServerAnswered, err)
	}
	return res, c.undeclaredTask(what, op)
}

// undeclaredTask is ErrUndeclaredTask when op's tools/call, which declared
// no Tasks extension, was answered with a resultType other than complete
// or input_required (the SDK would read a task as an empty result).
func (c *Conn) undeclaredTask(what string, op *operation) error {
	switch rt := c.tr.callResultType(op); rt {
	case "", "complete", "input_required":
		return nil
	default:
		return fmt.Errorf("mcp: %s: %w: resultType %q (protocol %s)", what, ErrUndeclaredTask, text.Truncate(rt, 64), c.Stats().ProtocolVersion)
	}
}

// content converts one SDK block. keep is false for the sampling-only
// types a tool result has no use for (tool_use, tool_result).
func content(block sdk.Content) (c Content, keep bool, err error) {
	switch b := block.(type) {
	case *sdk.TextContent:
		return Content{Type: "text", Text: b.Text}, true, nil
	case *sdk.ImageContent:
		return Content{Type: "image", Data: b.Data, MIMEType: b.MIMEType}, true, nil
	case *sdk.AudioContent:
		return Content{Type: "audio", Data: b.Data, MIMEType: b.MIMEType}, true, nil
	case *sdk.ResourceLink:
		return Content{Type: "resource_link", URI: b.URI, MIMEType: b.MIMEType}, true, nil
	case *sdk.EmbeddedResource:
		if b.Resource == nil {
			return Content{}, false, errors.New("a resource block carries no resource")
		}
		r := b.Resource
		return Content{Type: "resource", URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Data: r.Blob}, true, nil
	default:
		return Content{}, false, nil
	}
}
