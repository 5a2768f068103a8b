package mcp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacy20241105: a go-sdk v1.8.0 server restricted to 2024-11-05 is
// negotiated down to it through the legacy initialize, with or without the
// catalog's hint; a two-page listing and a call work, every exchange after
// initialize speaks 2024-11-05, and the requests are exactly these.
func TestLegacy20241105(t *testing.T) {
	const legacy = "2024-11-05"
	for _, tc := range []struct {
		name    string
		hint    string
		offered string // protocolVersion the initialize request offers
		methods []string
	}{
		{
			name:    "full negotiation",
			offered: "2025-11-25",
			methods: []string{"server/discover", "initialize", "notifications/initialized",
				"tools/list", "tools/list", "tools/call", "DELETE"},
		},
		{
			name:    "hint skips server/discover",
			hint:    legacy,
			offered: legacy,
			methods: []string{"initialize", "notifications/initialized",
				"tools/list", "tools/list", "tools/call", "DELETE"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, url := serveSDKFixture(t, &sdk.ServerOptions{SupportedProtocolVersions: []string{legacy}, PageSize: 1}, "")
			c, err := Connect(testCtx(t, 10*time.Second), Config{URL: url, HTTPClient: loopback(t, url, 5*time.Second), ProtocolVersion: tc.hint})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			l, err := c.ListTools(testCtx(t, 5*time.Second))
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			schema := json.RawMessage(`{"properties":{"text":{"type":"string"}},"type":"object"}`)
			wantTools := []Tool{
				{Name: "echo", Description: "echos its text", InputSchema: schema},
				{Name: "greet", Description: "greets its text", InputSchema: schema},
			}
			if diff := cmp.Diff(wantTools, l.Tools); diff != "" || len(l.Refused) != 0 {
				t.Errorf("tools (-want +got):\n%s\nrefused: %v", diff, l.Refused)
			}
			res, err := c.CallTool(testCtx(t, 5*time.Second), "greet", json.RawMessage(`{"text":"2024"}`))
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if diff := cmp.Diff(&CallResult{Content: []Content{{Type: "text", Text: "hello 2024"}}}, res); diff != "" {
				t.Errorf("greet (-want +got):\n%s", diff)
			}
			st := c.Stats()
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}

			// Stats were taken before Close sent the DELETE.
			want := Stats{ProtocolVersion: legacy, ServerName: "fixture", ServerVersion: "2.0.0",
				Requests: len(tc.methods) - 1, ResponseBytes: st.ResponseBytes}
			if diff := cmp.Diff(want, st); diff != "" || st.ResponseBytes <= 0 {
				t.Errorf("stats before Close (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.methods, log.methods()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			reqs := log.requests()
			for i, r := range reqs {
				if r.Method == "initialize" {
					if r.Offered != tc.offered {
						t.Errorf("initialize offered %q, want %q", r.Offered, tc.offered)
					}
					for _, after := range reqs[i+1:] {
						if after.Version != legacy {
							t.Errorf("%s sent MCP-Protocol-Version %q, want %q", after.Method, after.Version, legacy)
						}
					}
				}
			}
		})
	}
}
