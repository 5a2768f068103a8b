package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// discoveryFrom connects to a stateless server the way discovery does and
// returns what it would record.
func discoveryFrom(t *testing.T) string {
	t.Helper()
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	d := c.Stats().Discovery
	if d == "" {
		t.Fatal("a 2026-07-28 connection recorded no Discovery")
	}
	return d
}

func TestDiscoveryRecordsWhatServerDiscoverSaid(t *testing.T) {
	d := discoveryFrom(t)
	var got struct {
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
		Meta              map[string]struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(d), &got); err != nil {
		t.Fatalf("Discovery %s: %v", d, err)
	}
	if diff := cmp.Diff([]string{"2026-07-28"}, got.SupportedVersions); diff != "" {
		t.Errorf("supportedVersions (-want +got):\n%s", diff)
	}
	if _, ok := got.Capabilities["tools"]; !ok {
		t.Errorf("capabilities %v lack tools", got.Capabilities)
	}
	if info := got.Meta["io.modelcontextprotocol/serverInfo"]; info.Name != mcptest.Name || info.Version != mcptest.Version {
		t.Errorf("server info %+v, want %s %s", info, mcptest.Name, mcptest.Version)
	}

	legacy := mcptest.NewServer(t, mcptest.Options{})
	if d := mustConnect(t, Config{URL: legacy.URL, HTTPClient: legacy.Client()}).Stats().Discovery; d != "" {
		t.Errorf("a legacy connection recorded Discovery %s", d)
	}
}

func TestPrimedCallIsOneRequest(t *testing.T) {
	d := discoveryFrom(t)
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	c, err := Connect(testCtx(t, 10*time.Second), Config{URL: s.URL, HTTPClient: s.Client(), Discovery: d})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Requests(); n != 0 {
		t.Errorf("a primed Connect sent %d requests (%v), want 0", n, s.Methods())
	}
	res, err := c.CallTool(testCtx(t, 10*time.Second), "echo", []byte(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&CallResult{Content: []Content{{Type: "text", Text: "hi"}}}, res); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	st := c.Stats()
	want := Stats{ProtocolVersion: "2026-07-28", ServerName: mcptest.Name, ServerVersion: mcptest.Version,
		Requests: 1, ResponseBytes: st.ResponseBytes, Discovery: st.Discovery, Primed: true}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if diff := cmp.Diff([]string{"tools/call"}, s.Methods()); diff != "" {
		t.Errorf("methods on the wire (-want +got):\n%s", diff)
	}
}

// TestPrimedCallFallsBackOnce: a server that moved to the legacy era
// refuses the primed call with HTTP 400 before running it; the Conn
// connects again, unprimed, and the tool runs once.
func TestPrimedCallFallsBackOnce(t *testing.T) {
	d := discoveryFrom(t)
	s := mcptest.NewServer(t, mcptest.Options{})
	c, err := Connect(testCtx(t, 10*time.Second), Config{URL: s.URL, HTTPClient: s.Client(), Discovery: d})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(testCtx(t, 10*time.Second), "echo", []byte(`{"text":"hi"}`))
	if err != nil {
		t.Fatalf("CallTool: %v (methods %v)", err, s.Methods())
	}
	if len(res.Content) != 1 || res.Content[0].Text != "hi" {
		t.Errorf("echo = %+v", res)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	want := []string{"tools/call", "server/discover", "initialize", "notifications/initialized", "tools/call", "DELETE"}
	if diff := cmp.Diff(want, s.Methods()); diff != "" {
		t.Errorf("methods on the wire (-want +got):\n%s", diff)
	}
	if n := s.CallCount("echo"); n != 1 {
		t.Errorf("echo ran %d times, want 1", n)
	}
	st := c.Stats()
	if !st.Primed || !st.PrimeFallback || st.ProtocolVersion != "2025-11-25" || st.Requests != len(want) || st.Discovery != "" {
		t.Errorf("Stats = %+v, want primed, fallen back, 2025-11-25, %d requests, no Discovery", st, len(want))
	}
}

// TestPrimedRefusalsThatDoNotFallBack: an answer from a server that runs
// tools (a JSON-RPC error in a 200, a tool error) is the call's outcome;
// only a 400 that shows a legacy server connects again, and only once.
func TestPrimedRefusalsThatDoNotFallBack(t *testing.T) {
	d := discoveryFrom(t)
	tests := []struct {
		name    string
		call    func(w http.ResponseWriter, id json.RawMessage)
		calls   int
		wantErr error
	}{
		{
			name:    "unknown tool in a 200",
			call:    func(w http.ResponseWriter, id json.RawMessage) { writeError(w, id, -32602, "unknown tool") },
			calls:   1,
			wantErr: ErrServerAnswered,
		},
		{
			name: "a 400 that is not about the version",
			call: func(w http.ResponseWriter, id json.RawMessage) {
				badRequest(w, id, map[string]any{"code": -32602, "message": "bad arguments"})
			},
			calls:   1,
			wantErr: ErrServerAnswered,
		},
		{
			name: "unsupported version, every time",
			call: func(w http.ResponseWriter, id json.RawMessage) {
				badRequest(w, id, map[string]any{"code": -32022, "message": "unsupported protocol version",
					"data": map[string]any{"supported": []string{"2026-07-28"}}})
			},
			calls:   2, // the primed call, then once after the real connect
			wantErr: ErrServerAnswered,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{modern: true, call: func(w http.ResponseWriter, id, _ json.RawMessage) { tt.call(w, id) }})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 10*time.Second), Discovery: d})
			_, err := c.CallTool(testCtx(t, 10*time.Second), "echo", nil)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("CallTool err = %v, want %v", err, tt.wantErr)
			}
			if n := s.count("tools/call"); n != tt.calls {
				t.Errorf("tools/call sent %d times (%v), want %d", n, s.Methods(), tt.calls)
			}
			if st := c.Stats(); st.PrimeFallback != (tt.calls == 2) {
				t.Errorf("PrimeFallback = %v", st.PrimeFallback)
			}
		})
	}
}

func TestUnusableDiscoveryIsIgnored(t *testing.T) {
	legacyOnly := `{"supportedVersions":["2025-11-25"],"capabilities":{}}`
	for name, d := range map[string]string{
		"not JSON":       `{"supportedVersions":`,
		"not an object":  `["2026-07-28"]`,
		"legacy only":    legacyOnly,
		"unknown future": `{"supportedVersions":["2099-01-01"],"capabilities":{}}`,
		"too large":      `{"supportedVersions":["2026-07-28"],"instructions":"` + strings.Repeat("x", MaxDiscoveryBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client(), Discovery: d})
			if st := c.Stats(); st.Primed || st.Requests != 1 {
				t.Errorf("Stats = %+v, want an ordinary connect (one server/discover)", st)
			}
		})
	}
}

// badRequest answers with HTTP 400 carrying the JSON-RPC error e.
func badRequest(w http.ResponseWriter, id json.RawMessage, e map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}
