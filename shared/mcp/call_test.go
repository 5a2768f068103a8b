package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

func callOn(t *testing.T, s *scripted, name string, args json.RawMessage) (*CallResult, error) {
	t.Helper()
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	return c.CallTool(testCtx(t, 10*time.Second), name, args)
}

func TestCallToolResults(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	for _, tc := range []struct {
		tool string
		args string
		want *CallResult
	}{
		{"everything", "", &CallResult{Content: []Content{
			{Type: "text", Text: "hello"},
			{Type: "image", Data: mcptest.PNG, MIMEType: "image/png"},
			{Type: "audio", Data: mcptest.WAV, MIMEType: "audio/wav"},
			{Type: "resource_link", URI: "file:///report.csv", MIMEType: "text/csv"},
			{Type: "resource", URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"},
			{Type: "resource", URI: "file:///doc.pdf", MIMEType: "application/pdf", Data: mcptest.PDF},
		}}},
		{"add", `{"a":2,"b":3.5}`, &CallResult{
			Content:    []Content{{Type: "text", Text: "5.5"}},
			Structured: json.RawMessage(`{"sum":5.5}`),
		}},
		{"fail", "{}", &CallResult{Content: []Content{{Type: "text", Text: "the tool failed on purpose"}}, IsError: true}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			got, err := c.CallTool(testCtx(t, 10*time.Second), tc.tool, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallToolDropsSamplingOnlyBlocks(t *testing.T) {
	s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
		rawResult(w, id, `{"content":[
			{"type":"tool_use","id":"u1","name":"n","input":{}},
			{"type":"text","text":"kept"},
			{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"r"}]}]}`)
	}})
	got, err := callOn(t, s, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&CallResult{Content: []Content{{Type: "text", Text: "kept"}}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestCallToolRefusesAnswerOfOnlySamplingBlocks: an answer whose every
// block is dropped leaves nothing to hand the model; it is the server's
// answer, refused, and not an empty result.
func TestCallToolRefusesAnswerOfOnlySamplingBlocks(t *testing.T) {
	s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
		rawResult(w, id, `{"content":[
			{"type":"tool_use","id":"u1","name":"n","input":{}},
			{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"r"}]}]}`)
	}})
	got, err := callOn(t, s, "x", nil)
	if !errors.Is(err, ErrServerAnswered) {
		t.Fatalf("CallTool = %+v, %v; want an error wrapping ErrServerAnswered", got, err)
	}
	if errors.Is(err, ErrProtocol) || errors.Is(err, ErrUnauthorized) {
		t.Errorf("err = %v also wraps ErrProtocol or ErrUnauthorized", err)
	}
}

// TestCallToolEmptyContentIsAResult: no blocks at all is the tool's answer
// (structuredContent may carry it), not a refusal.
func TestCallToolEmptyContentIsAResult(t *testing.T) {
	s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
		rawResult(w, id, `{"content":[],"structuredContent":{"n":1}}`)
	}})
	got, err := callOn(t, s, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&CallResult{Structured: json.RawMessage(`{"n":1}`)}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSDKFailsWholeResultOnUnknownOrNullBlock pins go-sdk v1.8.0: a
// content block of an unknown type, or a null block, fails decoding of the
// whole CallToolResult, so no block reaches the wrapper to be dropped. The
// wrapper reports it as ErrServerAnswered.
func TestSDKFailsWholeResultOnUnknownOrNullBlock(t *testing.T) {
	for _, tc := range []struct{ name, result string }{
		{"unknown type", `{"content":[{"type":"text","text":"a"},{"type":"hologram","data":"x"}]}`},
		{"null block", `{"content":[{"type":"text","text":"a"},null]}`},
		{"bad base64", `{"content":[{"type":"image","data":"***","mimeType":"image/png"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
				rawResult(w, id, tc.result)
			}})
			if _, err := sdkSession(t, s.URL, nil).CallTool(testCtx(t, 5*time.Second), &sdk.CallToolParams{Name: "x"}); err == nil {
				t.Error("go-sdk decoded the result; the wrapper's mapping of this case is now dead code")
			}
			if _, err := callOn(t, s, "x", nil); !errors.Is(err, ErrServerAnswered) {
				t.Errorf("CallTool err = %v, want ErrServerAnswered", err)
			}
		})
	}
}

func TestCallToolServerAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter, id json.RawMessage)
		answered bool
	}{
		{"JSON-RPC error", func(w http.ResponseWriter, id json.RawMessage) { writeError(w, id, -32602, "unknown tool") }, true},
		{"JSON-RPC error on HTTP 400", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32602,"message":"bad arguments"}}`))
		}, true},
		{"unreadable JSON", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[`))
		}, true},
		{"HTML page", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html>hello</html>`))
		}, true},
		{"unreadable SSE event", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message\ndata: {not json\n\n"))
		}, true},
		{"JSON-RPC error after the server pinged on the stream", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(`data: {"jsonrpc":"2.0","id":"srv-1","method":"ping"}` + "\n\n"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond) // the client answers the ping meanwhile
			w.Write([]byte(`data: {"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32000,"message":"no"}}` + "\n\n"))
		}, true},
		{"resource block without contents", func(w http.ResponseWriter, id json.RawMessage) {
			rawResult(w, id, `{"content":[{"type":"resource"}]}`)
		}, true},
		{"HTTP 500 without JSON-RPC", func(w http.ResponseWriter, id json.RawMessage) {
			http.Error(w, "oops", http.StatusInternalServerError)
		}, false},
		{"HTTP 404 without JSON-RPC", func(w http.ResponseWriter, id json.RawMessage) {
			http.Error(w, "gone", http.StatusNotFound)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) { tc.answer(w, id) }})
			_, err := callOn(t, s, "x", nil)
			if err == nil {
				t.Fatal("CallTool succeeded")
			}
			if got := errors.Is(err, ErrServerAnswered); got != tc.answered {
				t.Errorf("errors.Is(%v, ErrServerAnswered) = %v, want %v", err, got, tc.answered)
			}
			if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrProtocol) {
				t.Errorf("err = %v also wraps ErrUnauthorized or ErrProtocol", err)
			}
		})
	}
}

func TestCallToolUnknownToolOnGoSDKServer(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	if _, err := c.CallTool(testCtx(t, 5*time.Second), "no_such_tool", nil); !errors.Is(err, ErrServerAnswered) {
		t.Errorf("err = %v, want ErrServerAnswered", err)
	}
}

// TestCallToolInputRequired covers the three input_required shapes, and
// pins how go-sdk v1.8.0's multi-round-trip middleware treats each: it
// answers roots/list itself and re-sends up to 10 times, refuses
// elicitation at once (no handler), re-sends an empty inputRequests 3 times,
// and hands back a result without inputRequests.
func TestCallToolInputRequired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		result   string
		attempts int
	}{
		{"roots request", `{"resultType":"input_required","inputRequests":{"r1":{"method":"roots/list","params":{}}}}`, 10},
		{"elicitation request", `{"resultType":"input_required","inputRequests":{"e1":{"method":"elicitation/create","params":{"message":"who?","requestedSchema":{"type":"object","properties":{}}}}}}`, 1},
		{"empty inputRequests (load shedding)", `{"resultType":"input_required","inputRequests":{}}`, 3},
		{"absent inputRequests", `{"resultType":"input_required"}`, 1},
		{"null inputRequests", `{"resultType":"input_required","inputRequests":null}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
				rawResult(w, id, tc.result)
			}})
			_, err := callOn(t, s, "x", nil)
			if !errors.Is(err, ErrServerAnswered) {
				t.Errorf("err = %v, want ErrServerAnswered", err)
			}
			if got := s.count("tools/call"); got != tc.attempts {
				t.Errorf("tools/call requests = %d, want %d", got, tc.attempts)
			}
		})
	}
}

func TestCallToolArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args json.RawMessage
		want string // as the server received it
	}{
		{"nil", nil, `{}`},
		{"empty", json.RawMessage{}, `{}`},
		{"whitespace", json.RawMessage(" \n"), `{}`},
		{"null", json.RawMessage("null"), `{}`},
		{"object compacted, order and spelling kept", json.RawMessage("{ \"b\" : 1.50, \"a\":\"<&>\",\n \"n\": 1e2 }"), `{"b":1.50,"a":"<&>","n":1e2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
				rawResult(w, id, `{"content":[]}`)
			}})
			if _, err := callOn(t, s, "x", tc.args); err != nil {
				t.Fatal(err)
			}
			if got := sentArguments(t, s); got != tc.want {
				t.Errorf("server received arguments %s, want %s", got, tc.want)
			}
		})
	}
	s := serveScripted(t, &scripted{})
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, `1`} {
		if _, err := callOn(t, s, "x", json.RawMessage(bad)); !errors.Is(err, errNotObject) {
			t.Errorf("arguments %s: err = %v, want errNotObject", bad, err)
		}
	}
	if got := s.count("tools/call"); got != 0 {
		t.Errorf("tools/call requests = %d for invalid arguments, want 0", got)
	}
}

// TestSDKSendsTypedNilRawMessageAsNull pins the pitfall CallTool avoids: a
// nil json.RawMessage stored in CallToolParams.Arguments is not == nil, so
// go-sdk v1.8.0 sends "arguments":null rather than {}.
func TestSDKSendsTypedNilRawMessageAsNull(t *testing.T) {
	s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
		rawResult(w, id, `{"content":[]}`)
	}})
	cs := sdkSession(t, s.URL, nil)
	if _, err := cs.CallTool(testCtx(t, 5*time.Second), &sdk.CallToolParams{Name: "x", Arguments: json.RawMessage(nil)}); err != nil {
		t.Fatal(err)
	}
	if got := sentArguments(t, s); got != "null" {
		t.Errorf("go-sdk sent arguments %s for a typed-nil RawMessage, want null", got)
	}
}

func sentArguments(t *testing.T, s *scripted) string {
	t.Helper()
	calls := s.params("tools/call")
	if len(calls) != 1 {
		t.Fatalf("server saw %d tools/call, want 1", len(calls))
	}
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(calls[0], &p); err != nil {
		t.Fatal(err)
	}
	return string(p.Arguments)
}
