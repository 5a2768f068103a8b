package mcp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

func TestConnectOpensNoStandaloneStream(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	if _, err := c.ListTools(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if slices.Contains(s.Methods(), "GET") {
		t.Errorf("requests %v include a GET", s.Methods())
	}
}

// TestSDKOpensStandaloneStreamUnlessDisabled pins why Connect sets
// DisableStandaloneSSE: on a legacy negotiation go-sdk v1.8.0 opens a GET
// stream after the handshake otherwise.
func TestSDKOpensStandaloneStreamUnlessDisabled(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	client := sdkClient()
	cs, err := client.Connect(testCtx(t, 5*time.Second), sdkTransport(s.URL, s.Client(), false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(testCtx(t, 5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if !slices.Contains(s.Methods(), "GET") {
		t.Errorf("requests %v include no GET; DisableStandaloneSSE may no longer be needed", s.Methods())
	}
}

// TestConnectAdvertisesNoCapabilities also pins why Capabilities is set:
// go-sdk v1.8.0's default client advertises roots.
func TestConnectAdvertisesNoCapabilities(t *testing.T) {
	capabilities := func(s *scripted) string {
		t.Helper()
		init := s.params("initialize")
		if len(init) != 1 {
			t.Fatalf("initialize sent %d times", len(init))
		}
		var p struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(init[0], &p); err != nil {
			t.Fatal(err)
		}
		return string(p.Capabilities)
	}
	ours := serveScripted(t, &scripted{})
	mustConnect(t, Config{URL: ours.URL, HTTPClient: loopback(t, ours.URL, 5*time.Second)})
	if got := capabilities(ours); got != "{}" {
		t.Errorf("capabilities = %s, want {}", got)
	}
	sdkDefault := serveScripted(t, &scripted{})
	sdkSession(t, sdkDefault.URL, nil)
	if got := capabilities(sdkDefault); !strings.Contains(got, "roots") {
		t.Errorf("go-sdk's default capabilities = %s; setting them empty may no longer be needed", got)
	}
}

func TestConnectProtocolVersionHint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    mcptest.Options
		hint    string
		version string
		methods []string
	}{
		{"legacy hint skips discover", mcptest.Options{}, "2025-11-25", "2025-11-25",
			[]string{"initialize", "notifications/initialized"}},
		{"older legacy hint is honoured", mcptest.Options{}, "2025-06-18", "2025-06-18",
			[]string{"initialize", "notifications/initialized"}},
		{"modern hint to a legacy server negotiates down", mcptest.Options{}, "2026-07-28", "2025-11-25",
			[]string{"server/discover", "initialize", "notifications/initialized"}},
		{"unknown hint is ignored", mcptest.Options{}, "1999-01-01", "2025-11-25",
			[]string{"server/discover", "initialize", "notifications/initialized"}},
		{"modern hint to a modern server", mcptest.Options{Stateless: true}, "2026-07-28", "2026-07-28",
			[]string{"server/discover"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mcptest.NewServer(t, tc.opts)
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client(), ProtocolVersion: tc.hint})
			if got := c.Stats().ProtocolVersion; got != tc.version {
				t.Errorf("version = %q, want %q", got, tc.version)
			}
			if diff := cmp.Diff(tc.methods, s.Methods()); diff != "" {
				t.Errorf("handshake (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConnectWrongHintFallsBack: a server that refuses the hinted version's
// initialize is connected to with full negotiation.
func TestConnectWrongHintFallsBack(t *testing.T) {
	s := serveScripted(t, &scripted{})
	s.initialize = func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage) {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if p.ProtocolVersion != "2025-11-25" {
			writeError(w, id, -32602, "unsupported protocol version")
			return
		}
		writeResult(w, id, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{},
			"serverInfo":      map[string]any{"name": "picky", "version": "1"},
		})
	}
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 5*time.Second), ProtocolVersion: "2025-03-26"})
	want := []string{"initialize", "server/discover", "initialize", "notifications/initialized"}
	if diff := cmp.Diff(want, s.Methods()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if st := c.Stats(); st.ProtocolVersion != "2025-11-25" || st.ServerName != "picky" || st.Requests != 4 {
		t.Errorf("stats = %+v", st)
	}
}

func TestConnectBearerToken(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{BearerToken: "s3cret"})
	for _, tc := range []struct {
		name   string
		token  string
		status int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "nope", http.StatusForbidden},
		{"right token", "s3cret", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(testCtx(t, 5*time.Second), Config{URL: s.URL, HTTPClient: s.Client(), BearerToken: tc.token})
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			var ue *UnauthorizedError
			if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &ue) {
				t.Fatalf("err = %v, want an *UnauthorizedError", err)
			}
			if ue.Status != tc.status || ue.Challenge != mcptest.Challenge {
				t.Errorf("got %d %q, want %d %q", ue.Status, ue.Challenge, tc.status, mcptest.Challenge)
			}
			if errors.Is(err, ErrProtocol) || errors.Is(err, ErrServerAnswered) {
				t.Errorf("err = %v also wraps ErrProtocol or ErrServerAnswered", err)
			}
			if strings.Contains(err.Error(), "nope") {
				t.Errorf("error %q repeats the token", err)
			}
		})
	}
}

// TestUnauthorizedOnALaterExchange: a 401 to a listing or a call, after a
// handshake that succeeded, is ErrUnauthorized too.
func TestUnauthorizedOnALaterExchange(t *testing.T) {
	deny := func(w http.ResponseWriter) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}
	s := serveScripted(t, &scripted{
		list: func(w http.ResponseWriter, _ json.RawMessage, _ string) { deny(w) },
		call: func(w http.ResponseWriter, _ json.RawMessage, _ json.RawMessage) { deny(w) },
	})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 5*time.Second)})
	_, err := c.ListTools(testCtx(t, 5*time.Second))
	var ue *UnauthorizedError
	if !errors.As(err, &ue) || ue.Challenge != `Bearer error="insufficient_scope"` || errors.Is(err, ErrProtocol) {
		t.Errorf("ListTools err = %v, want only ErrUnauthorized with the challenge", err)
	}
	c2 := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 5*time.Second)})
	if _, err = c2.CallTool(testCtx(t, 5*time.Second), "x", nil); !errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrServerAnswered) {
		t.Errorf("CallTool err = %v, want only ErrUnauthorized", err)
	}
}

func TestConnectRefusesRedirects(t *testing.T) {
	target := mcptest.NewServer(t, mcptest.Options{})
	for _, code := range []int{301, 302, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL, code)
			}))
			defer redirector.Close()
			_, err := Connect(testCtx(t, 5*time.Second), Config{URL: redirector.URL + "/mcp", HTTPClient: loopback(t, redirector.URL, 5*time.Second), BearerToken: "tok"})
			if !errors.Is(err, guard.ErrRedirect) {
				t.Errorf("err = %v, want guard.ErrRedirect", err)
			}
		})
	}
	if n := target.Requests(); n != 0 {
		t.Errorf("the redirect target saw %d requests", n)
	}
}

// TestTokenStaysWithItsOrigin: a supplied client that follows redirects
// does not carry the bearer token to another origin.
func TestTokenStaysWithItsOrigin(t *testing.T) {
	var sawToken bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken = sawToken || r.Header.Get("Authorization") != ""
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	follows := &http.Client{Transport: &http.Transport{}}
	defer follows.CloseIdleConnections()
	if _, err := Connect(testCtx(t, 5*time.Second), Config{URL: redirector.URL, HTTPClient: follows, BearerToken: "tok"}); err == nil {
		t.Fatal("Connect succeeded against a 404")
	}
	if sawToken {
		t.Error("the token reached the redirect target")
	}
}

func TestConnectEgress(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	secure := strings.Replace(s.URL, "http://", "https://", 1)
	nothingAllowed, err := guard.NewPolicy()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		url    string
		client *http.Client
		want   error
	}{
		{"loopback through DefaultClient", secure, nil, guard.ErrDenied},
		{"loopback through CallClient", secure, CallClient, guard.ErrDenied},
		{"plain http through DefaultClient", "http://example.invalid/mcp", nil, guard.ErrBadURL},
		{"userinfo", "https://u:p@example.invalid/mcp", nil, guard.ErrBadURL},
		{"no host", "https:///mcp", DefaultClient, guard.ErrBadURL},
		{"dial refused by a supplied guarded client", s.URL, guard.NewClientWithPolicy(nothingAllowed, 5*time.Second), guard.ErrDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(testCtx(t, 5*time.Second), Config{URL: tc.url, HTTPClient: tc.client})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if errors.Is(err, ErrProtocol) || errors.Is(err, ErrUnauthorized) {
				t.Errorf("err = %v also wraps ErrProtocol or ErrUnauthorized", err)
			}
		})
	}
	if n := s.Requests(); n != 0 {
		t.Errorf("the server saw %d requests", n)
	}
}

// rawServer accepts connections and answers every request with head,
// without reading bodies beyond the request head.
func rawServer(t *testing.T, head string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					req.Body.Close()
					if _, err := conn.Write([]byte(head)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/mcp"
}

func TestHeaderBlocks(t *testing.T) {
	padded := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + strings.Repeat("a", 70<<10) + "\r\nContent-Length: 2\r\n\r\n{}"
	whitespace := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: a" + strings.Repeat(" ", 70<<10) + "\r\nContent-Length: 2\r\n\r\n{}"
	huge := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + strings.Repeat("a", 9<<20) + "\r\nContent-Length: 2\r\n\r\n{}"
	for _, tc := range []struct {
		name    string
		head    string
		guarded bool
		want    error
	}{
		{"header block past 64 KiB", padded, true, ErrProtocol},
		{"whitespace padding past 64 KiB", whitespace, true, ErrProtocol},
		{"9 MiB header through a client without a header cap", huge, false, ErrBudgetExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := rawServer(t, tc.head)
			client := &http.Client{Transport: &http.Transport{}}
			if tc.guarded {
				client = loopback(t, u, 5*time.Second)
			}
			defer client.CloseIdleConnections()
			// A generous deadline: reading 9 MiB under -race on a busy machine
			// took over 5 s once (a CI pair beside two helpers, load 16).
			_, err := Connect(testCtx(t, time.Minute), Config{URL: u, HTTPClient: client})
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrProtocol) {
				t.Errorf("err = %v, want %v wrapping ErrProtocol", err, tc.want)
			}
		})
	}
}

func TestErrorsHideTheEndpointQuery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/mcp?api_key=topsecret"
	ln.Close() // connection refused
	_, err = Connect(testCtx(t, 5*time.Second), Config{URL: u, HTTPClient: loopback(t, u, 5*time.Second)})
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Errorf("error %q shows the query", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("err = %v, want the *net.OpError kept in the chain", err)
	}
}

// rebinding refuses, as the guard's dialer would after a DNS rebind, every
// dial once the handshake is done.
type rebinding struct {
	next http.RoundTripper
	deny atomic.Bool
}

func (r *rebinding) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.deny.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp4", Err: &guard.DeniedError{Network: "tcp4", Addr: "127.0.0.1", Reason: guard.ReasonLoopback}}
	}
	return r.next.RoundTrip(req)
}

func TestDeniedDialAfterTheHandshake(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	for _, tc := range []struct {
		name string
		op   func(c *Conn) error
	}{
		{"ListTools", func(c *Conn) error { _, err := c.ListTools(testCtx(t, 5*time.Second)); return err }},
		{"CallTool", func(c *Conn) error { _, err := c.CallTool(testCtx(t, 5*time.Second), "echo", nil); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rb := &rebinding{next: s.Client().Transport}
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: &http.Client{Transport: rb}})
			rb.deny.Store(true)
			err := tc.op(c)
			if !errors.Is(err, guard.ErrDenied) || errors.Is(err, ErrServerAnswered) || errors.Is(err, ErrProtocol) {
				t.Errorf("err = %v, want guard.ErrDenied alone", err)
			}
		})
	}
}

// TestZeroConn: a Conn that Connect did not return refuses work with
// ErrNotConnected instead of panicking, and costs and closes nothing.
func TestZeroConn(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Conn
	}{
		{"zero", &Conn{}},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 5*time.Second)
			if _, err := tc.c.ListTools(ctx); !errors.Is(err, ErrNotConnected) {
				t.Errorf("ListTools err = %v, want ErrNotConnected", err)
			}
			if _, err := tc.c.CallTool(ctx, "x", nil); !errors.Is(err, ErrNotConnected) {
				t.Errorf("CallTool err = %v, want ErrNotConnected", err)
			}
			if s := tc.c.Stats(); s != (Stats{}) {
				t.Errorf("Stats = %+v, want zero", s)
			}
			if err := tc.c.Close(); err != nil {
				t.Errorf("Close = %v, want nil", err)
			}
		})
	}
	var c Conn
	if _, err := c.ListTools(t.Context()); err == nil || errors.Is(err, ErrProtocol) {
		t.Errorf("ListTools on var c Conn = %v, want ErrNotConnected and not ErrProtocol", err)
	}
}
