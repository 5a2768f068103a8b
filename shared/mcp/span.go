package mcp

// This file traces each MCP request as a CLIENT span by the OpenTelemetry
// MCP semantic conventions
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/), and carries
// the W3C trace context to the server in the HTTP headers and in the
// request's params._meta. A request whose context holds no recording span
// (tracing off) and no operation observer (WithOperations) costs nothing
// here.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names this package's tracer (the instrumentation scope).
const TracerName = "github.com/mcpfn/mcpfn/shared/mcp"

// ErrorTypeToolError is error.type on a tools/call the tool answered with
// isError true.
const ErrorTypeToolError = "tool_error"

// traceContext is the W3C propagator: traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// Operation is one MCP request as the client saw it: the
// mcp.client.operation.duration metric's measurement.
type Operation struct {
	Method    string        // mcp.method.name
	Origin    string        // the server's scheme://host:port, never a path or query
	Duration  time.Duration // from sending the request to its answer or failure
	ErrorType string        // "" when it succeeded, else the span's error.type
}

type observerKey struct{}

// WithOperations returns ctx whose MCP requests are each reported to
// observe once, when they end (answered, failed or abandoned). observe
// must be safe for concurrent use; it is called on the transport's path.
func WithOperations(ctx context.Context, observe func(Operation)) context.Context {
	return context.WithValue(ctx, observerKey{}, observe)
}

// mcpSpan is one request's span and operation; its methods are safe for
// concurrent use and do nothing on a nil *mcpSpan.
type mcpSpan struct {
	span trace.Span // nil when the request is only observed
	key  string     // the call's id key, "" for a notification
	once sync.Once

	observe func(Operation) // nil when not observed
	op      Operation
	start   time.Time
	mu      sync.Mutex // guards op.ErrorType
}

// spanFields is what a span reads from a request body.
type spanFields struct {
	Params segjson.RawMessage `json:"params"`
}

type paramFields struct {
	Name            string             `json:"name"`
	ProtocolVersion string             `json:"protocolVersion"`
	Meta            segjson.RawMessage `json:"_meta"`
}

// startSpan starts req's span, a child of the span its context holds, and
// returns it with req's body carrying the trace context in params._meta;
// nil and body unchanged when that span does not record.
func startSpan(req *http.Request, msg request, body []byte) (*mcpSpan, []byte) {
	parent := trace.SpanFromContext(req.Context())
	observe, _ := req.Context().Value(observerKey{}).(func(Operation))
	if !parent.IsRecording() && observe == nil || !msg.post || msg.method == "" {
		return nil, body
	}
	s := &mcpSpan{key: msg.key, observe: observe, start: time.Now(),
		op: Operation{Method: msg.method, Origin: req.URL.Scheme + "://" + req.URL.Host}}
	if !parent.IsRecording() {
		return s, body
	}
	var top spanFields
	var params paramFields
	if parse(body, &top) && len(top.Params) > 0 && top.Params[0] == '{' {
		decode(top.Params, &params)
	}
	name := msg.method
	attrs := []attribute.KeyValue{
		semconv.McpMethodNameKey.String(msg.method),
		semconv.ServerAddress(req.URL.Hostname()),
		semconv.ServerPort(port(req)),
		semconv.NetworkProtocolName("http"),
	}
	if msg.method == "tools/call" && params.Name != "" {
		name += " " + params.Name
		attrs = append(attrs, semconv.GenAIToolName(params.Name), semconv.GenAIOperationNameExecuteTool)
	}
	if v := req.Header.Get("Mcp-Protocol-Version"); v != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(v))
	} else if params.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(params.ProtocolVersion))
	}
	if len(msg.id) > 0 {
		id, ok := stringValue(msg.id)
		if !ok {
			id = string(msg.id)
		}
		attrs = append(attrs, semconv.JSONRPCRequestID(id))
	}
	ctx, span := parent.TracerProvider().Tracer(TracerName).Start(req.Context(), name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	s.span = span
	return s, withMeta(body, top.Params, params.Meta, carrier)
}

// port is req's server port, the scheme's default when the URL names none.
func port(req *http.Request) int {
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		return p
	}
	if req.URL.Scheme == "http" {
		return 80
	}
	return 443
}

// inject sets the trace context headers on out, whose Header it clones.
func (s *mcpSpan) inject(out *http.Request, req *http.Request, body []byte) {
	if s == nil || s.span == nil {
		return
	}
	closeBody(req)
	out.Header = req.Header.Clone()
	traceContext.Inject(trace.ContextWithSpan(req.Context(), s.span), propagation.HeaderCarrier(out.Header))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
}

// withMeta returns body with the carrier's entries in params._meta, which
// it adds (and params) where absent. params and meta alias body (the
// readers' raw values); the rest of body is kept byte for byte. A params
// or _meta that is not an object leaves body as it is.
func withMeta(body, params, meta []byte, carrier propagation.MapCarrier) []byte {
	var entries []byte
	for _, k := range carrier.Keys() {
		kb, _ := segjson.Marshal(k)
		vb, _ := segjson.Marshal(carrier[k])
		entries = append(append(append(append(entries, kb...), ':'), vb...), ',')
	}
	if len(entries) == 0 {
		return body
	}
	entries = entries[:len(entries)-1]
	splice := func(at int, parts ...[]byte) []byte {
		out := make([]byte, 0, len(body)+len(entries)+32)
		out = append(out, body[:at]...)
		for _, p := range parts {
			out = append(out, p...)
		}
		return append(out, body[at:]...)
	}
	// openObject returns the index just past v's '{' and whether v is an
	// empty object, or -1 when v is not an object inside body.
	openObject := func(v []byte) (int, bool) {
		off := cap(body) - cap(v)
		if len(v) == 0 || v[0] != '{' || off < 0 || off >= len(body) {
			return -1, false
		}
		return off + 1, len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	}
	switch {
	case len(meta) > 0:
		at, empty := openObject(meta)
		if at < 0 {
			return body
		}
		if empty {
			return splice(at, entries)
		}
		return splice(at, entries, []byte(","))
	case len(params) > 0:
		at, empty := openObject(params)
		if at < 0 {
			return body
		}
		if empty {
			return splice(at, []byte(`"_meta":{`), entries, []byte("}"))
		}
		return splice(at, []byte(`"_meta":{`), entries, []byte("},"))
	}
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return body
	}
	return splice(end, []byte(`,"params":{"_meta":{`), entries, []byte("}}"))
}

// answered records the answer m (a JSON-RPC message as readMessage read
// it, ok false when it is not one) when it answers s's call, and ends s:
// the JSON-RPC error code, or tool_error for a tools/call result with
// isError true. The transport reads each answer once, for itself and s.
func (s *mcpSpan) answered(m rpcMessage, ok bool) {
	if s == nil || s.key == "" {
		return
	}
	if !ok || m.result == nil && m.error == nil || idKey(m.id) != s.key {
		return // not an answer (a server's request may reuse the id), or another's
	}
	switch {
	case m.error != nil:
		var e struct {
			Code int `json:"code"`
		}
		decode(m.error, &e)
		code := strconv.Itoa(e.Code)
		s.setError(code, "JSON-RPC error "+code, semconv.RPCResponseStatusCode(code))
	case m.result != nil && s.op.Method == "tools/call": // only a tool's result has isError
		var r struct {
			IsError bool `json:"isError"`
		}
		if decode(m.result, &r) && r.IsError {
			s.setError(ErrorTypeToolError, ErrorTypeToolError)
		}
	}
	s.end()
}

// responded records the response's protocol version and, for a non-2xx
// status, error.type (the status code, as the HTTP conventions have it).
func (s *mcpSpan) responded(resp *http.Response) {
	if s == nil {
		return
	}
	if s.span != nil {
		s.span.SetAttributes(semconv.NetworkProtocolVersion(strconv.Itoa(resp.ProtoMajor) + "." + strconv.Itoa(resp.ProtoMinor)))
	}
	if resp.StatusCode/100 != 2 {
		code := strconv.Itoa(resp.StatusCode)
		s.setError(code, "HTTP "+code)
	}
}

// failed records a round trip that got no response.
func (s *mcpSpan) failed(err error) {
	if s == nil {
		return
	}
	t := "connection_error"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t = "timeout"
	}
	s.setError(t, t)
	s.end()
}

// setError records error.type t (and attrs) on s, its span's status
// described by desc.
func (s *mcpSpan) setError(t, desc string, attrs ...attribute.KeyValue) {
	s.mu.Lock()
	s.op.ErrorType = t
	s.mu.Unlock()
	if s.span != nil {
		s.span.SetAttributes(append(attrs, semconv.ErrorTypeKey.String(t))...)
		s.span.SetStatus(codes.Error, desc)
	}
}

// end ends s once: its span, and its operation reported to the observer.
func (s *mcpSpan) end() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		if s.span != nil {
			s.span.End()
		}
		if s.observe != nil {
			s.mu.Lock()
			op := s.op
			s.mu.Unlock()
			op.Duration = time.Since(s.start)
			s.observe(op)
		}
	})
}
