package mcptest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func connect(t *testing.T, s *mcptest.Server, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hc := s.Client()
	if token != "" {
		hc = &http.Client{Transport: bearer{token, hc.Transport}, CheckRedirect: hc.CheckRedirect}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
}

func TestServerEras(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    mcptest.Options
		version string
	}{
		{"stateful", mcptest.Options{PageSize: 4, ExtraTools: 3}, "2025-11-25"},
		{"stateless", mcptest.Options{Stateless: true, PageSize: 4, ExtraTools: 3}, "2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.NewServer(t, tc.opts)
			cs, err := connect(t, s, "")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Errorf("protocol version = %q, want %q", got, tc.version)
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != mcptest.Name {
				t.Errorf("server name = %q, want %q", got, mcptest.Name)
			}
			var names []string
			for tool, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if len(names) != 13 {
				t.Errorf("listed %d tools (%v), want 13", len(names), names)
			}
			pages := 0
			for _, m := range s.Methods() {
				if m == "tools/list" {
					pages++
				}
			}
			if pages != 4 {
				t.Errorf("tools/list requests = %d, want 4 (13 tools, 4 per page)", pages)
			}

			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3.5}})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != "5.5" {
				t.Errorf("add text = %q, want 5.5", got)
			}
			if diff := cmp.Diff(map[string]any{"sum": 5.5}, res.StructuredContent); diff != "" {
				t.Errorf("add structured (-want +got):\n%s", diff)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "everything"})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, c := range res.Content {
				b, _ := c.MarshalJSON()
				types = append(types, strings.SplitN(strings.SplitN(string(b), `"type":"`, 2)[1], `"`, 2)[0])
			}
			want := []string{"text", "image", "audio", "resource_link", "resource", "resource"}
			if diff := cmp.Diff(want, types); diff != "" {
				t.Errorf("everything block types (-want +got):\n%s", diff)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fail"})
			if err != nil || !res.IsError {
				t.Errorf("fail: IsError=%v err=%v, want a tool error", res != nil && res.IsError, err)
			}
			if got := s.CallCount("add"); got != 1 {
				t.Errorf("CallCount(add) = %d, want 1", got)
			}
			if got := s.CallCount("echo"); got != 0 {
				t.Errorf("CallCount(echo) = %d, want 0", got)
			}
		})
	}
}

func TestServerBearer(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{BearerToken: "s3cret"})
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong", "nope", http.StatusForbidden},
		{"right", "s3cret", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest {
				resp.StatusCode = http.StatusOK // past the auth check; the MCP handler answered
			}
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want != http.StatusOK && resp.Header.Get("WWW-Authenticate") != mcptest.Challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", resp.Header.Get("WWW-Authenticate"), mcptest.Challenge)
			}
		})
	}
	cs, err := connect(t, s, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
}

func TestLoopbackClientRefusesOtherPorts(t *testing.T) {
	a := mcptest.NewServer(t, mcptest.Options{})
	b := mcptest.NewServer(t, mcptest.Options{})
	req, _ := http.NewRequest(http.MethodGet, b.URL, nil)
	resp, err := a.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a's client reached b's port")
	}
	if b.Requests() != 0 {
		t.Errorf("b saw %d requests, want 0", b.Requests())
	}
}
