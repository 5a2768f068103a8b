package mcp

import (
	"encoding/json"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// TestOperationsObserved: without tracing, each MCP request is reported
// once to the context's observer with its method, the server's origin
// (no path or query) and the span's error.type: tool_error for an isError
// result, the JSON-RPC code for an error; "" when it succeeded.
func TestOperationsObserved(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "legacy", true: "2026-07-28"}[stateless], func(t *testing.T) {
			s := mcptest.NewServer(t, mcptest.Options{Stateless: stateless})
			var mu sync.Mutex
			var ops []Operation
			ctx := WithOperations(testCtx(t, 20*time.Second), func(op Operation) {
				mu.Lock()
				defer mu.Unlock()
				ops = append(ops, op)
			})
			c, err := Connect(ctx, Config{URL: s.URL + "?k=op-canary", HTTPClient: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
				t.Fatal(err)
			}
			if res, err := c.CallTool(ctx, "fail", nil); err != nil || !res.IsError {
				t.Fatalf("fail = %v, %v; want isError", res, err)
			}
			_, _ = c.CallTool(ctx, "no_such_tool", nil)
			c.Close()

			u, _ := url.Parse(s.URL)
			origin := u.Scheme + "://" + u.Host
			type got struct{ Method, Origin, ErrorType string }
			var gots []got
			mu.Lock()
			defer mu.Unlock()
			for _, op := range ops {
				if op.Duration <= 0 {
					t.Errorf("%s: duration %v", op.Method, op.Duration)
				}
				if op.Method == "tools/call" {
					gots = append(gots, got{op.Method, op.Origin, op.ErrorType})
				}
			}
			want := []got{{"tools/call", origin, ""}, {"tools/call", origin, ErrorTypeToolError}}
			if len(gots) != 3 || gots[2].ErrorType == "" || gots[2].ErrorType == ErrorTypeToolError {
				t.Fatalf("tools/call operations %+v, want 3, the last a JSON-RPC error", gots)
			}
			if diff := cmp.Diff(want, gots[:2]); diff != "" {
				t.Errorf("operations (-want +got):\n%s", diff)
			}
			if ops[0].Method != "initialize" && ops[0].Method != "server/discover" {
				t.Errorf("first operation %q, want the handshake", ops[0].Method)
			}
		})
	}
}
