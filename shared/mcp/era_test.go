package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

func TestEras(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    mcptest.Options
		version string
		methods []string
	}{
		{
			name:    "stateful legacy negotiation",
			opts:    mcptest.Options{PageSize: 5, ExtraTools: 5},
			version: "2025-11-25",
			methods: []string{"server/discover", "initialize", "notifications/initialized",
				"tools/list", "tools/list", "tools/list", "tools/call", "DELETE"},
		},
		{
			name:    "stateless 2026-07-28",
			opts:    mcptest.Options{Stateless: true, PageSize: 5, ExtraTools: 5},
			version: "2026-07-28",
			methods: []string{"server/discover", "tools/list", "tools/list", "tools/list", "tools/call"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.NewServer(t, tc.opts)
			c, err := Connect(testCtx(t, 10*time.Second), Config{URL: s.URL, HTTPClient: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			l, err := c.ListTools(testCtx(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tools) != 15 || len(l.Refused) != 0 {
				t.Errorf("listing: %d tools, %d refused (%v), want 15 and 0", len(l.Tools), len(l.Refused), l.Refused)
			}
			res, err := c.CallTool(testCtx(t, 10*time.Second), "echo", []byte(`{"text":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&CallResult{Content: []Content{{Type: "text", Text: "hi"}}}, res); diff != "" {
				t.Errorf("echo (-want +got):\n%s", diff)
			}
			st := c.Stats()
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if diff := cmp.Diff(tc.methods, s.Methods()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if st.ProtocolVersion != tc.version || st.ServerName != mcptest.Name || st.ServerVersion != mcptest.Version {
				t.Errorf("stats = %+v, want version %s server %s %s", st, tc.version, mcptest.Name, mcptest.Version)
			}
			if got, want := c.Stats().Requests, len(tc.methods); got != want {
				t.Errorf("Stats().Requests = %d, want %d", got, want)
			}
			if st.ResponseBytes <= 0 {
				t.Errorf("Stats().ResponseBytes = %d, want > 0", st.ResponseBytes)
			}
		})
	}
}

// TestConnectFallsBackWhenDiscoverAnswersAnotherID: a server that answers
// server/discover with a JSON-RPC error under another id, or none, has
// answered the probe (a JSON body answers the POST it came on), so the
// legacy handshake runs at once instead of after Connect's whole budget.
func TestConnectFallsBackWhenDiscoverAnswersAnotherID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, id json.RawMessage)
	}{
		{"error, another numeric id", func(w http.ResponseWriter, id json.RawMessage) {
			writeError(w, json.RawMessage(`999`), -32601, "method not found")
		}},
		{"error, a string id", func(w http.ResponseWriter, id json.RawMessage) {
			writeError(w, json.RawMessage(`"discover"`), -32600, "invalid request")
		}},
		{"error, null id", func(w http.ResponseWriter, id json.RawMessage) {
			writeError(w, json.RawMessage(`null`), -32601, "method not found")
		}},
		{"error, no id", func(w http.ResponseWriter, id json.RawMessage) {
			writeMessage(w, map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32601, "message": "method not found"}})
		}},
		{"result, another id", func(w http.ResponseWriter, id json.RawMessage) {
			writeResult(w, json.RawMessage(`999`), map[string]any{"supportedVersions": []string{"2026-07-28"}})
		}},
		{"error, another id, on an SSE stream", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(`data: {"jsonrpc":"2.0","id":999,"error":{"code":-32601,"message":"method not found"}}` + "\n\n"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{discover: tc.answer})
			start := time.Now()
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Connect took %v, want well within its %v budget", took, DialTimeout)
			}
			if got := c.Stats().ProtocolVersion; got != "2025-11-25" {
				t.Errorf("ProtocolVersion = %q, want the legacy fallback's 2025-11-25", got)
			}
			want := []string{"server/discover", "initialize", "notifications/initialized"}
			if diff := cmp.Diff(want, s.Methods()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnswerUnderAnotherIDIsTheServers: a call or listing answered under
// another id fails at once, as the server's answer.
func TestAnswerUnderAnotherIDIsTheServers(t *testing.T) {
	s := serveScripted(t, &scripted{
		list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
			rawResult(w, json.RawMessage(`"elsewhere"`), `{"tools":[]}`)
		},
		call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
			writeError(w, json.RawMessage(`12345`), -32602, "unknown tool")
		},
	})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	start := time.Now()
	if _, err := c.ListTools(testCtx(t, 10*time.Second)); !errors.Is(err, ErrProtocol) {
		t.Errorf("ListTools err = %v, want ErrProtocol", err)
	}
	if _, err := c.CallTool(testCtx(t, 10*time.Second), "x", nil); !errors.Is(err, ErrServerAnswered) {
		t.Errorf("CallTool err = %v, want ErrServerAnswered", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("ListTools and CallTool took %v, want an immediate failure", took)
	}
}
