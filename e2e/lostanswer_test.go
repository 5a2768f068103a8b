package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// lostAnswerServer serves mcptest on loopback, but no tools/call answer
// ever arrives: the tool runs, then the connection is closed before a byte
// of the answer is written, as when the server or a proxy dies mid-answer.
// Every other request is served normally.
func lostAnswerServer(t *testing.T) (string, *mcptest.Counters) {
	t.Helper()
	h, counters := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if method, err := mcptest.Method(r); err != nil || method != "tools/call" {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&voidWriter{header: http.Header{}}, r) // the tool runs; its answer goes nowhere
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack the tools/call connection: %v", err)
			return
		}
		conn.Close()
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", counters
}

// voidWriter is a ResponseWriter that keeps nothing.
type voidWriter struct{ header http.Header }

func (w *voidWriter) Header() http.Header         { return w.header }
func (w *voidWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *voidWriter) WriteHeader(int)             {}
func (w *voidWriter) Flush()                      {}

// TestStateMachineRunsALostCallOnce: the tool runs and its answer is lost,
// so the first attempt fails with mcp_connection_failed_error after the
// request reached the server. The call state machine retries; each retry
// replays the recorded outcome from the calls table (moto) instead of
// calling again, and the execution ends in CallFailed with the original
// wire error. With tool_use_id the call is keyed by it; without, by the
// execution ARN the state machine adds as idempotency_key; a caller's own
// idempotency_key is kept.
func TestStateMachineRunsALostCallOnce(t *testing.T) {
	node(t)
	tests := []struct {
		name    string
		input   map[string]any
		wantKey func(ex execution) string
	}{
		{"with tool_use_id", map[string]any{"tool_use_id": "toolu_sfn_lost"}, func(execution) string { return "toolu_sfn_lost" }},
		{"without tool_use_id", map[string]any{}, func(ex execution) string { return ex.ID }},
		{"with the caller's idempotency_key", map[string]any{"idempotency_key": "caller-key:lost/1"}, func(execution) string { return "caller-key:lost/1" }},
	}
	servers := make([]string, len(tests))
	counters := make([]*mcptest.Counters, len(tests))
	var allow []string
	for i := range tests {
		servers[i], counters[i] = lostAnswerServer(t)
		allow = append(allow, allowOnly(t, servers[i]))
	}
	s := newStack(t, stackOptions{allow: allow})
	calls := ledger.NewDynamo(dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(t.Context())), s.callsTable, time.Minute)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := map[string]any{
				"server_url": servers[i], "tool_name": "echo",
				"arguments": map[string]any{"text": "exactly once", "n": 1.5, "nested": map[string]any{"k": []any{true, nil}}},
			}
			for k, v := range tt.input {
				input[k] = v
			}
			ex := runStateMachine(t, "call", input, map[string]string{"CallTool": s.call.URL()})

			if n := counters[i].CallCount("echo"); n != 1 {
				t.Errorf("echo ran %d times, want exactly 1", n)
			}
			if ex.Status != "FAILED" || ex.Error != "mcp_connection_failed_error" {
				t.Fatalf("execution %s with error %q (cause %s), want FAILED with mcp_connection_failed_error", ex.Status, ex.Error, ex.Cause)
			}
			if ex.count("StateEntered", "CallFailed") != 1 {
				t.Errorf("the execution did not end in CallFailed: %+v", ex.Events)
			}
			if n := ex.count("StateRetried", "CallTool"); n != 3 {
				t.Errorf("%d retries, want the retrier's 3, each a replay", n)
			}
			if !strings.Contains(ex.Cause, `"errorType":"mcp_connection_failed_error"`) || !strings.Contains(ex.Cause, "(outcome of an earlier delivery)") {
				t.Errorf("cause %s, want the function's error replaying the first attempt's outcome", ex.Cause)
			}

			// The request reached the function as given, plus idempotency_key.
			want := map[string]any{}
			for k, v := range input {
				want[k] = v
			}
			if _, ok := want["idempotency_key"]; !ok {
				want["idempotency_key"] = ex.ID
			}
			var wantJSON any
			decode(t, mustJSON(t, want), &wantJSON)
			if n := ex.count("StateEntered", "CallTool"); n != 1 {
				t.Fatalf("CallTool entered %d times, want once (retries stay inside the state)", n)
			}
			if len(ex.Invocations) != 4 {
				t.Fatalf("%d invocations, want the first attempt and 3 retries", len(ex.Invocations))
			}
			for i, inv := range ex.Invocations {
				var got any
				decode(t, inv.Payload, &got)
				if diff := cmp.Diff(wantJSON, got); diff != "" {
					t.Errorf("invocation %d of %s (-want +got):\n%s", i, inv.State, diff)
				}
			}

			// The real ledger holds the first attempt's outcome under the key.
			entry, err := calls.Begin(t.Context(), tt.wantKey(ex))
			if err != nil {
				t.Fatal(err)
			}
			if !entry.Done || entry.Outcome.ErrorType != "mcp_connection_failed_error" {
				t.Errorf("calls table entry %+v, want the recorded mcp_connection_failed_error", entry)
			}
		})
	}
}
