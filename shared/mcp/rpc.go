package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// TasksExtension is the Tasks extension's identifier, declared in the
// per-request client capabilities of every task-aware request.
const TasksExtension = "io.modelcontextprotocol/tasks"

// modernVersion is the first revision with per-request _meta, resultType
// and the Tasks extension.
const modernVersion = "2026-07-28"

// rpcIDs numbers the requests sent outside the SDK; each is its own HTTP
// exchange, so ids only need to differ within one process's logs.
var rpcIDs atomic.Int64

// RPCError is a JSON-RPC error a server answered a request sent outside
// the SDK with (tasks/*, a task-aware tools/call). Code is the JSON-RPC code.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, truncateServerText(e.Message))
}

// modern reports whether c negotiated 2026-07-28 or later.
func (c *Conn) modern() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats.ProtocolVersion >= modernVersion
}

// requestMeta is the per-request _meta of a task-aware request: the
// negotiated version, who we are, and capabilities declaring the Tasks
// extension and the input requests the platform hands back to its caller.
func (c *Conn) requestMeta() map[string]any {
	c.mu.Lock()
	v := c.stats.ProtocolVersion
	c.mu.Unlock()
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion": v,
		"io.modelcontextprotocol/clientInfo":      implementation,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions":  map[string]any{TasksExtension: map[string]any{}},
			"elicitation": map[string]any{"form": map[string]any{}},
			"sampling":    map[string]any{},
			"roots":       map[string]any{},
		},
	}
}

// rpc sends one JSON-RPC request through the Conn's transport (so every
// budget, the guard and the credential apply) and returns its result.
// name goes in the Mcp-Name header. A JSON-RPC error is an *RPCError
// wrapped with ErrServerAnswered.
func (c *Conn) rpc(ctx context.Context, what, method, name string, params map[string]any) (json.RawMessage, error) {
	params["_meta"] = c.requestMeta()
	id := rpcIDs.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: %w", what, err)
	}
	octx, op, done := c.begin(ctx)
	defer done()
	req, err := http.NewRequestWithContext(octx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(octx, op, what, ErrServerAnswered, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.Stats().ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	if c.oauth != nil {
		if err := c.oauthToken(octx, req); err != nil {
			return nil, c.fail(octx, op, what, ErrServerAnswered, err)
		}
	}
	raw, err := c.exchange(octx, op, what, req, id)
	if err != nil && method == "tools/call" {
		again, cerr := c.unprime(octx, op)
		switch {
		case cerr != nil:
			return nil, fmt.Errorf("%w (connecting again, unprimed, after: %v)", cerr, err)
		case again:
			return nil, errUnprimed
		}
	}
	return raw, err
}

// errUnprimed reports that a primed request was refused as a legacy
// server's and the Conn connected again, unprimed: send it again.
var errUnprimed = errors.New("mcp: connected again, unprimed")

// exchange sends req and reads the answer to request id.
func (c *Conn) exchange(octx context.Context, op *operation, what string, req *http.Request, id int64) (json.RawMessage, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.fail(octx, op, what, ErrServerAnswered, err)
	}
	defer resp.Body.Close()
	msg, err := readResponse(resp, id)
	if err != nil {
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return nil, c.fail(octx, op, what, ErrServerAnswered, unauthorized(resp))
		}
		return nil, c.fail(octx, op, what, ErrServerAnswered, err)
	}
	if msg.Error != nil {
		return nil, c.redact(fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, msg.Error))
	}
	if len(msg.Result) == 0 || msg.Result[0] != '{' {
		return nil, c.redact(fmt.Errorf("mcp: %s: %w: the result is not a JSON object", what, ErrServerAnswered))
	}
	return msg.Result, nil
}

// oauthToken sets the Authorization header from the Conn's OAuth handler.
func (c *Conn) oauthToken(ctx context.Context, req *http.Request) error {
	ts, err := c.oauth.TokenSource(ctx)
	if err != nil || ts == nil {
		return fmt.Errorf("%w: no OAuth token source: %v", ErrUnauthorized, err)
	}
	tok, err := ts.Token()
	if err != nil {
		return fmt.Errorf("%w: OAuth token: %w", ErrUnauthorized, err)
	}
	tok.SetAuthHeader(req)
	return nil
}

// rpcAnswer is a JSON-RPC response.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// UnmarshalJSON reads a JSON-RPC error object.
func (e *RPCError) UnmarshalJSON(b []byte) error {
	var w struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.Code, e.Message = w.Code, truncateServerText(w.Message)
	return nil
}

// errNoAnswer is a response that carried no answer to the request.
var errNoAnswer = errors.New("the response carried no answer to the request")

// readResponse finds the answer to request id in resp: a JSON body, or
// the first matching message of an event stream. The transport has
// already bounded what the body may cost.
func readResponse(resp *http.Response, id int64) (*rpcAnswer, error) {
	want := strconv.FormatInt(id, 10)
	match := func(b []byte) (*rpcAnswer, bool) {
		var m rpcAnswer
		if json.Unmarshal(b, &m) != nil || string(bytes.TrimSpace(m.ID)) != want || (m.Result == nil && m.Error == nil) {
			return nil, false
		}
		return &m, true
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && resp.StatusCode/100 == 2 {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), MaxResponseBytes)
		var data []byte
		for sc.Scan() {
			l := sc.Bytes()
			switch {
			case len(l) == 0 && len(data) > 0:
				if m, ok := match(data); ok {
					return m, nil
				}
				data = data[:0]
			case bytes.HasPrefix(l, []byte("data:")):
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))...)
			}
		}
		if m, ok := match(data); ok {
			return m, nil
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errNoAnswer
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if m, ok := match(body); ok {
		return m, nil
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil, errNoAnswer
}
