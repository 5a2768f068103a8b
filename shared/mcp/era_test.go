package mcp

import (
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
