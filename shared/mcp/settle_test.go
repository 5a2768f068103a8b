package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// sseAnswer writes result as the one event of an SSE stream, then keeps
// the stream open until tail passes or stop is closed.
func sseAnswer(w http.ResponseWriter, id json.RawMessage, result string, tail time.Duration, stop <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result)
	w.(http.Flusher).Flush()
	select {
	case <-time.After(tail):
	case <-stop:
	}
}

// countingClient is a plain client whose dials are counted.
func countingClient(dials *atomic.Int64) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}, Timeout: 30 * time.Second}
}

// TestOperationsLetAnsweredStreamsEndAndKeepTheConnection: the SDK returns
// a listing as soon as its SSE event arrives and reads the rest of the
// stream in a goroutine. Ending ListTools then would cancel that read and
// close the connection; waiting for the stream to end keeps it for the
// call.
func TestOperationsLetAnsweredStreamsEndAndKeepTheConnection(t *testing.T) {
	defer func(d time.Duration) { settleTimeout = d }(settleTimeout)
	settleTimeout = 10 * time.Second // the wait, not its bound, is under test
	s := serveScripted(t, &scripted{
		list: func(w http.ResponseWriter, id json.RawMessage, _ string) {
			sseAnswer(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`, 100*time.Millisecond, nil)
		},
		call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
			rawResult(w, id, `{"content":[{"type":"text","text":"ok"}]}`)
		},
	})
	var dials atomic.Int64
	hc := countingClient(&dials)
	defer hc.CloseIdleConnections()
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: hc})
	l, err := c.ListTools(testCtx(t, 20*time.Second))
	if err != nil || len(l.Tools) != 1 {
		t.Fatalf("ListTools = %+v, %v", l, err)
	}
	if _, err := c.CallTool(testCtx(t, 20*time.Second), "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dials = %d, want 1: the listing's connection served the call", n)
	}
}

// TestAnsweredStreamLeftOpenDelaysAnOperationBoundedly: a server that
// answers in an SSE stream and never ends it costs each operation at most
// settleTimeout.
func TestAnsweredStreamLeftOpenDelaysAnOperationBoundedly(t *testing.T) {
	stop := make(chan struct{})
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, _ string) {
		sseAnswer(w, id, `{"tools":[]}`, time.Hour, stop)
	}})
	t.Cleanup(func() { close(stop) }) // before the server closes: it waits for its handlers
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	start := time.Now()
	if _, err := c.ListTools(testCtx(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("ListTools took %v against a stream left open, want about %v more than the answer", took, settleTimeout)
	}
	checkClosesPromptly(t, c)
}

func checkClosesPromptly(t *testing.T, c *Conn) {
	t.Helper()
	start := time.Now()
	c.Close()
	if took := time.Since(start); took > overshootLimit {
		t.Errorf("Close took %v, want under %v", took, overshootLimit)
	}
}
