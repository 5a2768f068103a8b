package interop

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// fixtureTools is what js/tools.mjs lists over three pages (3, 3, 1).
var fixtureTools = []string{"echo", "add", "structured", "page2_a", "page2_b", "page2_c", "page3_a"}

// TestTypeScriptSDKEras connects to a TypeScript SDK v2 server (2026-07-28,
// server/discover) and a v1 stateless server (2025-11-25) and counts the
// HTTP requests of each step: connect, a three-page listing, one call, close.
func TestTypeScriptSDKEras(t *testing.T) {
	requireInterop(t)
	tests := []struct {
		name        string
		start       func(*testing.T) *peer
		hint        string
		wantVersion string
		wantServer  [2]string
		// Requests each step adds.
		connect, list, call, close int
	}{
		{
			name:  "v2 negotiates 2026-07-28 with one server/discover",
			start: startTS2, wantVersion: "2026-07-28", wantServer: [2]string{"interop-ts2", "2.4.0"},
			connect: 1, list: 3, call: 1, close: 0,
		},
		{
			name:  "v2 with a 2025-11-25 hint is served by the stateless legacy fallback",
			start: startTS2, hint: "2025-11-25", wantVersion: "2025-11-25", wantServer: [2]string{"interop-ts2", "2.4.0"},
			connect: 2, list: 3, call: 1, close: 0, // initialize, notifications/initialized
		},
		{
			name:  "v1 stateless: server/discover refused, then initialize",
			start: startTS1, wantVersion: "2025-11-25", wantServer: [2]string{"interop-ts1", "1.32.2"},
			connect: 3, list: 3, call: 1, close: 0, // no session id, so no DELETE
		},
		{
			name:  "v1 stateless with the negotiated version as hint skips server/discover",
			start: startTS1, hint: "2025-11-25", wantVersion: "2025-11-25", wantServer: [2]string{"interop-ts1", "1.32.2"},
			connect: 2, list: 3, call: 1, close: 0,
		},
		{
			name:  "v1 stateless with a wrong 2026-07-28 hint still connects",
			start: startTS1, hint: "2026-07-28", wantVersion: "2025-11-25", wantServer: [2]string{"interop-ts1", "1.32.2"},
			connect: 3, list: 3, call: 1, close: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.start(t)
			hc, err := mcptest.LoopbackClient(p.URL, mcp.CallTimeout)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(hc.CloseIdleConnections)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			conn, err := mcp.Connect(ctx, mcp.Config{URL: p.URL, HTTPClient: hc, ProtocolVersion: tt.hint})
			if err != nil {
				t.Fatalf("Connect: %v\n%s", err, p.Output())
			}
			t.Cleanup(func() { _ = conn.Close() })
			s := conn.Stats()
			if s.ProtocolVersion != tt.wantVersion || [2]string{s.ServerName, s.ServerVersion} != tt.wantServer {
				t.Errorf("negotiated %q with %q %q, want %q with %q", s.ProtocolVersion, s.ServerName, s.ServerVersion, tt.wantVersion, tt.wantServer)
			}
			steps := []int{s.Requests}

			listing, err := conn.ListTools(ctx)
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			var names []string
			for _, tool := range listing.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff(fixtureTools, names); diff != "" || len(listing.Refused) != 0 {
				t.Errorf("listed (-want +got):\n%s\nrefused: %v", diff, listing.Refused)
			}
			steps = append(steps, conn.Stats().Requests)

			res, err := conn.CallTool(ctx, "structured", json.RawMessage(`{"city":"Oslo"}`))
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			want := &mcp.CallResult{
				Content:    []mcp.Content{{Type: "text", Text: `{"city":"Oslo","celsius":21.5}`}},
				Structured: json.RawMessage(`{"city":"Oslo","celsius":21.5}`),
			}
			if diff := cmp.Diff(want, res, jsonEqual); diff != "" {
				t.Errorf("CallTool (-want +got):\n%s", diff)
			}
			steps = append(steps, conn.Stats().Requests)

			if err := conn.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			steps = append(steps, conn.Stats().Requests)

			got := []int{steps[0], steps[1] - steps[0], steps[2] - steps[1], steps[3] - steps[2]}
			if diff := cmp.Diff([]int{tt.connect, tt.list, tt.call, tt.close}, got); diff != "" {
				t.Errorf("requests for connect, list, call, close (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrimedCall primes a call with what a connection to the same server
// recorded: no server/discover goes out and the call is one HTTP request,
// against the TypeScript SDK v2 server and a go-sdk stateless one. A v1
// server, standing for one that moved back to the legacy era, refuses the
// primed call; the Conn connects again unprimed and the call is answered.
func TestPrimedCall(t *testing.T) {
	requireInterop(t)
	ts2 := startTS2(t)
	discovery := recordDiscovery(t, ts2.URL, ts2.Output)
	ts1 := startTS1(t)
	gosdk := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	noOutput := func() string { return "" }
	tests := []struct {
		name      string
		url       string
		output    func() string
		discovery string
		args      string
		want      string
		version   string
		requests  int
		fallback  bool
	}{
		{name: "TypeScript v2: one request", url: ts2.URL, output: ts2.Output, discovery: discovery,
			args: `{"message":"primed"}`, want: "echo: primed", version: "2026-07-28", requests: 1},
		{name: "go-sdk stateless: one request", url: gosdk.URL, output: noOutput, discovery: recordDiscovery(t, gosdk.URL, noOutput),
			args: `{"text":"primed"}`, want: "primed", version: "2026-07-28", requests: 1},
		// the refused call, server/discover, initialize,
		// notifications/initialized, the call; no session id, no DELETE.
		{name: "TypeScript v1: refused, then connected again", url: ts1.URL, output: ts1.Output, discovery: discovery,
			args: `{"message":"primed"}`, want: "echo: primed", version: "2025-11-25", requests: 5, fallback: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc, err := mcptest.LoopbackClient(tt.url, mcp.CallTimeout)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(hc.CloseIdleConnections)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn, err := mcp.Connect(ctx, mcp.Config{URL: tt.url, HTTPClient: hc, ProtocolVersion: "2026-07-28", Discovery: tt.discovery})
			if err != nil {
				t.Fatalf("Connect: %v\n%s", err, tt.output())
			}
			if n := conn.Stats().Requests; n != 0 {
				t.Errorf("a primed Connect sent %d requests", n)
			}
			res, err := conn.CallTool(ctx, "echo", json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("CallTool: %v\n%s", err, tt.output())
			}
			if diff := cmp.Diff(&mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: tt.want}}}, res); diff != "" {
				t.Errorf("CallTool (-want +got):\n%s", diff)
			}
			if err := conn.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			s := conn.Stats()
			if s.Requests != tt.requests || s.ProtocolVersion != tt.version || !s.Primed || s.PrimeFallback != tt.fallback {
				t.Errorf("Stats = %+v, want %d requests at %s, primed, fallback %t", s, tt.requests, tt.version, tt.fallback)
			}
		})
	}
}

// recordDiscovery connects to url as discovery does and returns the
// server/discover answer a catalog would keep.
func recordDiscovery(t *testing.T, url string, output func() string) string {
	t.Helper()
	hc, err := mcptest.LoopbackClient(url, mcp.CallTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	conn, err := mcp.Connect(t.Context(), mcp.Config{URL: url, HTTPClient: hc})
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, output())
	}
	defer conn.Close()
	d := conn.Stats().Discovery
	if d == "" {
		t.Fatalf("the connection recorded no server/discover answer (%+v)", conn.Stats())
	}
	return d
}
