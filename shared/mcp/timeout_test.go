package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTransportAppliesClientTimeout: under the client's Timeout, which
// net/http applies, a request's deadline is the earlier of it and the
// request's own deadline, the caps still apply, and no fallback deadline
// replaces it.
func TestTransportAppliesClientTimeout(t *testing.T) {
	endpoint, _ := url.Parse("http://127.0.0.1:1/mcp")
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		method   string
		body     string
		deadline time.Duration // from now; zero: none
		want     time.Duration
	}{
		{"Timeout instead of the fallback", 2 * time.Minute, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, 2 * time.Minute},
		{"Timeout before the request's deadline", time.Minute, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, time.Hour, time.Minute},
		{"request's deadline before Timeout", time.Hour, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, time.Minute, time.Minute},
		{"DELETE cap before Timeout", time.Minute, http.MethodDelete, "", 0, deleteTimeout},
		{"notifications/cancelled cap before Timeout", time.Minute, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, time.Hour, cancelNotifyTimeout},
		{"Timeout before the DELETE cap", 100 * time.Millisecond, http.MethodDelete, "", 0, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := deadlineRecorder{make(chan time.Time, 1)}
			tr := newTransport(rec, endpoint, "")
			defer tr.kill()
			hc := &http.Client{Transport: tr, Timeout: tc.timeout}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, tc.method, endpoint.String(), strings.NewReader(tc.body))
			start := time.Now()
			resp, err := hc.Do(req)
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

// redirectOnce answers the first request with a redirect and records the
// deadline of each request it sees.
type redirectOnce struct {
	deadlines []time.Time
}

func (r *redirectOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	dl, _ := req.Context().Deadline()
	r.deadlines = append(r.deadlines, dl)
	if len(r.deadlines) == 1 {
		time.Sleep(10 * time.Millisecond) // a second hop starting later must not get a later deadline
		return &http.Response{StatusCode: http.StatusTemporaryRedirect, Header: http.Header{"Location": {"/next"}}, Body: http.NoBody, Request: req}, nil
	}
	return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestClientTimeoutSpansRedirects: as with http.Client.Timeout, the hops of
// a redirect chain share the deadline of its first request.
func TestClientTimeoutSpansRedirects(t *testing.T) {
	endpoint, _ := url.Parse("http://127.0.0.1:1/mcp")
	rec := &redirectOnce{}
	tr := newTransport(rec, endpoint, "")
	defer tr.kill()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	req, _ := http.NewRequest(http.MethodPost, endpoint.String(), strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(rec.deadlines) != 2 || !rec.deadlines[1].Equal(rec.deadlines[0]) {
		t.Errorf("deadlines of the hops = %v, want two equal ones", rec.deadlines)
	}
}

// TestClientTimeoutEndsAListing: a supplied client's Timeout bounds each
// request of the connection even when the operation's deadline is far off.
func TestClientTimeoutEndsAListing(t *testing.T) {
	s := serveScripted(t, &scripted{hang: map[string]bool{"tools/list": true, methodCancelled: true, "DELETE": true}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 300*time.Millisecond)})
	defer c.Close()
	start := time.Now()
	_, err := c.ListTools(testCtx(t, 20*time.Second))
	if err == nil || errors.Is(err, ErrProtocol) || errors.Is(err, ErrServerAnswered) {
		t.Fatalf("ListTools = %v, want a transport failure", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("ListTools took %v, want about the client's 300ms Timeout", took)
	}
}
