package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingTransport counts the response body bytes its caller reads.
type countingTransport struct {
	next http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestSDKReadsJSONBodyInFullBeforeDecoding pins why the budget is charged
// in the transport: go-sdk v1.8.0 reads an application/json response to
// its end (io.ReadAll in handleJSON) before decoding it, so it would read
// whatever a server sends. A response followed by 1 MiB of whitespace is
// read to the last byte before the listing returns.
func TestSDKReadsJSONBodyInFullBeforeDecoding(t *testing.T) {
	padding := strings.Repeat(" ", 1<<20)
	var listBody atomic.Int64
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, _ string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, id) + padding
		listBody.Store(int64(len(body)))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}})
	hc := loopback(t, s.URL, 5*time.Second)
	ct := &countingTransport{next: hc.Transport}
	cs, err := sdkClient().Connect(testCtx(t, 5*time.Second), sdkTransport(s.URL, &http.Client{Transport: ct}, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	before := ct.read.Load()
	if _, err := cs.ListTools(testCtx(t, 5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ct.read.Load()-before, listBody.Load(); got != want {
		t.Errorf("go-sdk read %d of the %d body bytes before returning the listing", got, want)
	}
}

// TestSDKStreamableMaxEventSizeZeroMeansNoCap pins why Connect sets
// MaxEventSize explicitly: on the streamable client transport of go-sdk
// v1.8.0 a zero MaxEventSize is passed through as "no cap", not
// DefaultMaxEventSize (16 MiB) as its doc says.
func TestSDKStreamableMaxEventSizeZeroMeansNoCap(t *testing.T) {
	desc := strings.Repeat("d", sdk.DefaultMaxEventSize+(1<<20))
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, `data: {"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","description":"%s","inputSchema":{"type":"object"}}]}}`+"\n\n", id, desc)
	}})
	for _, tc := range []struct {
		name    string
		max     int
		wantErr bool
	}{
		{"zero", 0, false},
		{"explicit 1 MiB", 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Generous bounds: under -race on a busy machine reading a
			// 17 MiB event has taken over 10 s; the test is about the cap.
			tr := sdkTransport(s.URL, loopback(t, s.URL, 2*time.Minute), true)
			tr.MaxEventSize = tc.max
			cs, err := sdkClient().Connect(testCtx(t, time.Minute), tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = cs.ListTools(testCtx(t, 2*time.Minute), nil)
			if (err != nil) != tc.wantErr {
				t.Errorf("ListTools of a %d MiB event: err = %v, want error %v", len(desc)>>20, err, tc.wantErr)
			}
		})
	}
}

// deadlineRecorder answers 202 and records each request's deadline.
type deadlineRecorder struct {
	deadlines chan time.Time
}

func (d deadlineRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, _ := r.Context().Deadline()
	d.deadlines <- dl
	return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

func TestTransportDeadlines(t *testing.T) {
	endpoint, _ := url.Parse("http://127.0.0.1:1/mcp")
	far := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name     string
		method   string
		body     string
		deadline time.Time // zero: none
		want     time.Duration
	}{
		{"no deadline gets DialTimeout", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, time.Time{}, DialTimeout},
		{"a deadline is kept", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, far, time.Hour},
		{"notifications/cancelled is capped", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, far, cancelNotifyTimeout},
		{"DELETE is capped", http.MethodDelete, "", far, deleteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := deadlineRecorder{make(chan time.Time, 1)}
			tr := newTransport(rec, endpoint, "")
			defer tr.kill()
			ctx := context.Background()
			if !tc.deadline.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, tc.deadline)
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, tc.method, endpoint.String(), strings.NewReader(tc.body))
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := (<-rec.deadlines).Sub(start)
			if got < tc.want-time.Second/5 || got > tc.want+time.Second/5 {
				t.Errorf("request deadline in %v, want about %v", got, tc.want)
			}
		})
	}
}
