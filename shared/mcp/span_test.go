package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// traced returns a context holding a recording root span and the recorder
// that sees every ended span.
func traced(t *testing.T) (context.Context, trace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("test").Start(testCtx(t, 20*time.Second), "work item")
	return ctx, root, rec
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// mcpSpans returns the ended spans of this package, by name.
func mcpSpans(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.InstrumentationScope().Name == TracerName {
			out = append(out, s)
		}
	}
	return out
}

// TestSpansPerRequest: in both eras, every MCP request is one CLIENT span,
// a child of the caller's, named and attributed by the conventions, and
// the server sees the span's traceparent in the header and in
// params._meta; a listing has one span per page; a tool's isError is
// error.type tool_error.
func TestSpansPerRequest(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "legacy", true: "2026-07-28"}[stateless], func(t *testing.T) {
			s := mcptest.NewServer(t, mcptest.Options{Stateless: stateless, PageSize: 5, ExtraTools: 6})
			ctx, root, rec := traced(t)
			c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListTools(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
				t.Fatal(err)
			}
			if res, err := c.CallTool(ctx, "fail", nil); err != nil || !res.IsError {
				t.Fatalf("fail = %v, %v; want isError", res, err)
			}
			c.Close()
			root.End()

			spans := mcpSpans(rec)
			var names []string
			byID := map[string]sdktrace.ReadOnlySpan{}
			for _, sp := range spans {
				names = append(names, sp.Name())
				byID[sp.SpanContext().SpanID().String()] = sp
				if sp.SpanKind() != trace.SpanKindClient || sp.Parent().SpanID() != root.SpanContext().SpanID() {
					t.Errorf("%s: kind %v parent %v; want a client child of the root", sp.Name(), sp.SpanKind(), sp.Parent().SpanID())
				}
				a := spanAttrs(sp)
				if a["mcp.method.name"] == "" || a["server.address"] != "127.0.0.1" || a["server.port"] == "" || a["network.protocol.name"] != "http" {
					t.Errorf("%s attributes %v", sp.Name(), a)
				}
			}
			var posted []string
			for _, tr := range s.Traces() {
				if tr.Method == "GET" || tr.Method == "DELETE" {
					continue
				}
				posted = append(posted, tr.Method)
				if tr.Header == "" || tr.Header != tr.Meta {
					t.Errorf("%s: traceparent header %q, _meta %q; want the same, set", tr.Method, tr.Header, tr.Meta)
					continue
				}
				sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tr.Header}))
				sp := byID[sc.SpanID().String()]
				if sc.TraceID() != root.SpanContext().TraceID() || sp == nil || sp.Attributes() == nil || spanAttrs(sp)["mcp.method.name"] != tr.Method {
					t.Errorf("%s: traceparent %s names no span of its method in the trace", tr.Method, tr.Header)
				}
			}
			if len(posted) != len(spans) {
				t.Errorf("server saw %v, spans %v: want one span per request", posted, names)
			}
			pages := 0
			for _, sp := range spans {
				a := spanAttrs(sp)
				switch sp.Name() {
				case "tools/list":
					pages++
				case "tools/call echo":
					want := map[string]string{"gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool"}
					for k, v := range want {
						if a[k] != v {
							t.Errorf("echo %s = %q, want %q", k, a[k], v)
						}
					}
					if a["error.type"] != "" || a["jsonrpc.request.id"] == "" || a["mcp.protocol.version"] == "" || a["network.protocol.version"] != "1.1" {
						t.Errorf("echo attributes %v", a)
					}
				case "tools/call fail":
					if a["error.type"] != ErrorTypeToolError {
						t.Errorf("fail error.type = %q, want %s", a["error.type"], ErrorTypeToolError)
					}
				}
			}
			if want := strings.Count(strings.Join(posted, " "), "tools/list"); pages != want || pages < 2 {
				t.Errorf("%d tools/list spans, want %d (one per page, several pages): %v", pages, want, names)
			}
		})
	}
}

// TestPrimedCallIsOneSpan: a primed call is one request and one span.
func TestPrimedCallIsOneSpan(t *testing.T) {
	d := discoveryFrom(t)
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	ctx, root, rec := traced(t)
	c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client(), Discovery: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	root.End()
	var names []string
	for _, sp := range mcpSpans(rec) {
		names = append(names, sp.Name())
	}
	if diff := cmp.Diff([]string{"tools/call echo"}, names); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	if tr := s.Traces(); len(tr) != 1 || tr[0].Meta == "" || tr[0].Header != tr[0].Meta {
		t.Errorf("server saw %+v, want one traced tools/call", tr)
	}
}

// TestJSONRPCErrorSpan: a JSON-RPC error answer is rpc.response.status_code
// and error.type, its code.
func TestJSONRPCErrorSpan(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	ctx, root, rec := traced(t)
	c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "no_such_tool", nil)
	c.Close()
	root.End()
	var a map[string]string
	for _, sp := range mcpSpans(rec) {
		if sp.Name() == "tools/call no_such_tool" {
			a = spanAttrs(sp)
		}
	}
	if a == nil || a["rpc.response.status_code"] == "" || a["error.type"] != a["rpc.response.status_code"] {
		t.Errorf("span attributes %v (call %v, %v): want the JSON-RPC code as rpc.response.status_code and error.type", a, res, err)
	}
}

// TestNoSecretInSpans: the bearer token, the URL's path and query, and the
// tool's arguments and result appear in no span.
func TestNoSecretInSpans(t *testing.T) {
	const token, query, arg = "canary-token-5c1e", "key=canary-query-77", "canary-argument-9a"
	s := mcptest.NewServer(t, mcptest.Options{BearerToken: token})
	ctx, root, rec := traced(t)
	c, err := Connect(ctx, Config{URL: s.URL + "?" + query, BearerToken: token, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"`+arg+`"}`)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	root.End()
	spans := mcpSpans(rec)
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	for _, sp := range spans {
		text := sp.Name() + " " + sp.Status().Description
		for _, kv := range sp.Attributes() {
			text += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		for _, ev := range sp.Events() {
			text += " " + ev.Name
		}
		for _, canary := range []string{token, "canary-query", arg, "/mcp"} {
			if strings.Contains(text, canary) {
				t.Errorf("span %q holds %q: %s", sp.Name(), canary, text)
			}
		}
	}
}

// TestUntracedRequestIsUnchanged: without a recording span in the
// context, no trace context is sent.
func TestUntracedRequestIsUnchanged(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	if _, err := c.CallTool(testCtx(t, 10*time.Second), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tr := range s.Traces() {
		if tr.Header != "" || tr.Meta != "" {
			t.Errorf("%s carried trace context %+v", tr.Method, tr)
		}
	}
}

func TestWithMeta(t *testing.T) {
	carrier := propagation.MapCarrier{"traceparent": "00-aa-bb-01"}
	tests := []struct{ name, in, want string }{
		{"no params", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"traceparent":"00-aa-bb-01"}}}`},
		{"empty params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{ }}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"traceparent":"00-aa-bb-01"} }}`},
		{"params without _meta", `{"id":1,"method":"tools/call","params":{"name":"x","arguments":{"a" : 1.50}}}`,
			`{"id":1,"method":"tools/call","params":{"_meta":{"traceparent":"00-aa-bb-01"},"name":"x","arguments":{"a" : 1.50}}}`},
		{"params with _meta", `{"id":1,"method":"tasks/get","params":{"taskId":"t","_meta":{"k":"v"}}}`,
			`{"id":1,"method":"tasks/get","params":{"taskId":"t","_meta":{"traceparent":"00-aa-bb-01","k":"v"}}}`},
		{"empty _meta", `{"id":1,"method":"m","params":{"_meta":{}}}`,
			`{"id":1,"method":"m","params":{"_meta":{"traceparent":"00-aa-bb-01"}}}`},
		{"params not an object", `{"id":1,"method":"m","params":[1]}`, `{"id":1,"method":"m","params":[1]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.in)
			var top spanFields
			var params paramFields
			if !parse(body, &top) {
				t.Fatal("does not parse")
			}
			if len(top.Params) > 0 && top.Params[0] == '{' {
				decode(top.Params, &params)
			}
			got := string(withMeta(body, top.Params, params.Meta, carrier))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

// TestTaskRequestsHaveSpans: a task-aware call and its tasks/get and
// tasks/cancel are one span each, carrying the trace context in the
// header and in the _meta that already holds the request's own entries.
func TestTaskRequestsHaveSpans(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 3, PollIntervalMs: 2000, TTLMs: 60000}})
	ctx, root, rec := traced(t)
	c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.CallToolTask(ctx, mcptest.ToolTaskSleep, nil, nil)
	if err != nil || a.Pending == nil {
		t.Fatalf("CallToolTask = %+v, %v; want a pending task", a, err)
	}
	if _, err := c.GetTask(ctx, a.Pending.TaskID); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelTask(ctx, a.Pending.TaskID); err != nil {
		t.Fatal(err)
	}
	c.Close()
	root.End()
	var names []string
	for _, sp := range mcpSpans(rec) {
		names = append(names, sp.Name())
	}
	want := []string{"server/discover", "tools/call " + mcptest.ToolTaskSleep, "tasks/get", "tasks/cancel"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	for _, tr := range s.Traces() {
		if tr.Method != "DELETE" && tr.Method != "GET" && (tr.Meta == "" || tr.Header != tr.Meta) {
			t.Errorf("%s: traceparent header %q, _meta %q", tr.Method, tr.Header, tr.Meta)
		}
	}
}
