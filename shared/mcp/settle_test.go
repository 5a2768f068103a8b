package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// lingeringList serves the scripted handshake and calls, and answers
// tools/list in an SSE stream that stays open for tail after the answer.
// ended receives, per listing, whether the client left before tail passed.
type lingeringList struct {
	URL   string
	ended chan bool
}

func serveLingeringList(t *testing.T, tail time.Duration) *lingeringList {
	t.Helper()
	s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
		rawResult(w, id, `{"content":[{"type":"text","text":"ok"}]}`)
	}})
	l := &lingeringList{ended: make(chan bool, 8)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/list" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			s.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"t\",\"inputSchema\":{\"type\":\"object\"}}]}}\n\n", msg.ID)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(tail):
			l.ended <- false
		case <-r.Context().Done():
			l.ended <- true
		}
	}))
	t.Cleanup(ts.Close)
	l.URL = ts.URL + "/mcp"
	return l
}

// TestAnsweredStreamOutlivesItsOperation: the SDK returns a listing as
// soon as its SSE event arrives and reads the rest of the stream in a
// goroutine. The end of ListTools must not cut that read: cancelling a
// request whose body is being read closes its connection, and the next
// request has to dial (over TLS, handshake) again.
func TestAnsweredStreamOutlivesItsOperation(t *testing.T) {
	defer func(d time.Duration) { settleTimeout = d }(settleTimeout)
	settleTimeout = 10 * time.Second // longer than the stream stays open
	l := serveLingeringList(t, 100*time.Millisecond)
	c := mustConnect(t, Config{URL: l.URL, HTTPClient: loopback(t, l.URL, 30*time.Second)})
	if _, err := c.ListTools(testCtx(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if cut := <-l.ended; cut {
		t.Error("the client cut the answered stream when ListTools returned")
	}
	if _, err := c.CallTool(testCtx(t, 20*time.Second), "t", nil); err != nil {
		t.Fatal(err)
	}
}

// TestAnsweredStreamLeftOpenIsCutAfterItsOperation: a stream the server
// keeps open after the answer is read for settleTimeout past the end of
// the operation, then cancelled; ListTools does not wait for it.
func TestAnsweredStreamLeftOpenIsCutAfterItsOperation(t *testing.T) {
	l := serveLingeringList(t, time.Hour)
	c := mustConnect(t, Config{URL: l.URL, HTTPClient: loopback(t, l.URL, 30*time.Second)})
	start := time.Now()
	if _, err := c.ListTools(testCtx(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("ListTools took %v against a stream left open", took)
	}
	select {
	case cut := <-l.ended:
		if !cut {
			t.Error("the stream ran its course; want it cut")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream was still open 5s after ListTools, want it cut %v after", settleTimeout)
	}
	start = time.Now()
	c.Close()
	if took := time.Since(start); took > overshootLimit {
		t.Errorf("Close took %v, want under %v", took, overshootLimit)
	}
}
