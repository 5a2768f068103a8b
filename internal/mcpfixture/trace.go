package mcpfixture

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
)

// Trace is the W3C trace context one request carried: its method (as
// Methods), the traceparent HTTP header and params._meta.traceparent (""
// when absent), and the same for tracestate.
type Trace struct {
	Method      string
	Header      string
	Meta        string
	HeaderState string
	MetaState   string
}

// Traces returns one Trace per HTTP request, in arrival order.
func (c *Counters) Traces() []Trace {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.traces)
}

// Requests returns the number of HTTP requests received, including refused ones.
func (c *Counters) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Methods returns one entry per HTTP request, in arrival order: the
// JSON-RPC method for a POST ("initialize", "tools/list", ...; "POST" when
// the body names none) and the HTTP method otherwise ("GET", "DELETE").
func (c *Counters) Methods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.methods)
}

// CallCount returns how many times the named tool ran.
func (c *Counters) CallCount(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[tool]
}

// read is Method, and the trace context r carries.
func read(r *http.Request) (string, Trace, error) {
	tr := Trace{Header: r.Header.Get("traceparent"), HeaderState: r.Header.Get("tracestate")}
	if r.Method != http.MethodPost {
		return r.Method, tr, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return "", tr, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta struct {
				Traceparent string `json:"traceparent"`
				Tracestate  string `json:"tracestate"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
		tr.Meta, tr.MetaState = msg.Params.Meta.Traceparent, msg.Params.Meta.Tracestate
		return msg.Method, tr, nil
	}
	return r.Method, tr, nil
}
