package guard_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
)

const testTimeout = 10 * time.Second

// countingServer is an httptest server that counts the requests it receives.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "target")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// loopbackOnly passes requests to loopback hosts and fails, without sending,
// any other, recording every URL it is given.
type loopbackOnly struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []string
}

func (l *loopbackOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.urls = append(l.urls, req.URL.String())
	l.mu.Unlock()
	if a, err := netip.ParseAddr(req.URL.Hostname()); err != nil || !a.IsLoopback() {
		return nil, fmt.Errorf("test transport: refusing to send to %s", req.URL.Host)
	}
	return l.next.RoundTrip(req)
}

func TestTransportSettings(t *testing.T) {
	for name, c := range map[string]*http.Client{
		"NewClient":           guard.NewClient(2 * time.Minute),
		"NewClientWithPolicy": guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.1/32"), 30*time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			tr, ok := c.Transport.(*http.Transport)
			if !ok {
				t.Fatalf("Transport is %T, want *http.Transport", c.Transport)
			}
			if tr.Proxy != nil {
				t.Error("Proxy is set")
			}
			if tr.DialContext == nil || tr.DialTLSContext != nil {
				t.Error("want DialContext only")
			}
			if !tr.ForceAttemptHTTP2 {
				t.Error("ForceAttemptHTTP2 is false")
			}
			if tr.TLSClientConfig == nil || tr.TLSClientConfig.MinVersion != tls.VersionTLS12 {
				t.Error("TLS minimum is not 1.2")
			}
			if tr.MaxResponseHeaderBytes != guard.MaxHeaderBytes || guard.MaxHeaderBytes != 64<<10 {
				t.Errorf("MaxResponseHeaderBytes = %d, want 64 KiB", tr.MaxResponseHeaderBytes)
			}
			if tr.MaxIdleConns <= 0 || tr.MaxIdleConnsPerHost <= 0 || tr.IdleConnTimeout <= 0 || tr.TLSHandshakeTimeout <= 0 {
				t.Errorf("idle limits unset: %d %d %v %v", tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.IdleConnTimeout, tr.TLSHandshakeTimeout)
			}
			if c.CheckRedirect == nil || c.Jar != nil {
				t.Error("want CheckRedirect and no cookie jar")
			}
		})
	}
	if got := guard.NewClient(2 * time.Minute).Timeout; got != 2*time.Minute {
		t.Errorf("Timeout = %v, want the parameter", got)
	}
}

func TestRedirectsRefused(t *testing.T) {
	target, hits := countingServer(t)
	targets := map[string]string{
		"public":   "https://mcp.example.com/mcp?token=s3cret",
		"loopback": target.URL + "/mcp?token=s3cret",
	}
	for _, code := range []int{301, 302, 307, 308} {
		for kind, loc := range targets {
			t.Run(fmt.Sprintf("%d to %s", code, kind), func(t *testing.T) {
				redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, loc, code)
				}))
				t.Cleanup(redirector.Close)
				// The policy admits all of loopback, so only CheckRedirect stands
				// between the client and the loopback target.
				c := guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.0/8"), testTimeout)
				rt := &loopbackOnly{next: c.Transport}
				c.Transport = rt

				resp, err := c.Post(redirector.URL+"/mcp", "application/json", strings.NewReader(`{}`))
				if resp != nil {
					resp.Body.Close()
				}
				if !errors.Is(err, guard.ErrRedirect) {
					t.Fatalf("err = %v, want ErrRedirect", err)
				}
				var ue *url.Error
				if !errors.As(err, &ue) {
					t.Fatalf("err %T is not a *url.Error", err)
				}
				msg := ue.Err.Error()
				wantTarget, _, _ := strings.Cut(loc, "?")
				if !strings.Contains(msg, strconv.Itoa(code)) || !strings.Contains(msg, "to "+wantTarget) {
					t.Errorf("error %q does not name status %d and target %s", msg, code, wantTarget)
				}
				if strings.Contains(msg, "s3cret") {
					t.Errorf("error %q leaks the query", msg)
				}
				if strings.Contains(msg, "trailing slash") {
					t.Errorf("error %q claims a trailing-slash redirect", msg)
				}
				if len(rt.urls) != 1 {
					t.Errorf("transport saw %v, want only the first request", rt.urls)
				}
			})
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("loopback target received %d requests", n)
	}
}

func TestRedirectTrailingSlash(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			http.Redirect(w, r, "/mcp/", http.StatusPermanentRedirect)
			return
		}
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	c := guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.1/32"), testTimeout)

	resp, err := c.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, guard.ErrRedirect) {
		t.Fatalf("err = %v, want ErrRedirect", err)
	}
	want := fmt.Sprintf("guard: redirect not followed: 308 from %s/mcp to %s/mcp/ (the target only adds a trailing slash: configure the server URL with it)", srv.URL, srv.URL)
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("/mcp/ received %d requests", n)
	}
}

// TestProxyEnvironmentIgnored: with every proxy variable pointing at a live
// listener (see TestMain), a request to a name that is not localhost, so
// that the environment's proxy would apply, goes direct and the listener
// receives nothing.
func TestProxyEnvironmentIgnored(t *testing.T) {
	if os.Getenv("HTTPS_PROXY") == "" || os.Getenv("HTTP_PROXY") == "" {
		t.Fatal("TestMain did not set the proxy environment")
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	t.Cleanup(tlsSrv.Close)
	plainSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	t.Cleanup(plainSrv.Close)

	// example.com is the name in httptest's certificate; the fake resolver
	// maps it to loopback, so no lookup leaves the process.
	res := &seqResolver{answers: [][]netip.Addr{addrs("127.0.0.1")}}
	c := guard.NewClientWithDialer(&guard.Dialer{Policy: mustPolicy(t, "127.0.0.1/32"), Resolver: res}, testTimeout)
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool

	for _, srv := range []*httptest.Server{tlsSrv, plainSrv} {
		u, _ := url.Parse(srv.URL)
		u.Host = net.JoinHostPort("example.com", u.Port())
		resp, err := c.Get(u.String())
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "direct" {
			t.Errorf("GET %s = %q, want the server's answer", u, body)
		}
	}
	if got := envProxy.accepted(t); len(got) != 0 {
		t.Errorf("proxy listener received %v", got)
	}
}

// headerServer answers every request with a header block of about size bytes.
func headerServer(t *testing.T, size int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				w := bufio.NewWriter(conn)
				fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n")
				pad := strings.Repeat("a", 1024)
				for i := 0; i < size/1024; i++ {
					fmt.Fprintf(w, "X-Pad-%04d: %s\r\n", i, pad[:1024-len("X-Pad-0000: \r\n")])
				}
				fmt.Fprint(w, "\r\nok")
				w.Flush()
			})
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

func TestHeaderLimit(t *testing.T) {
	c := guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.1/32"), testTimeout)
	tests := []struct {
		name    string
		size    int
		wantErr bool
	}{
		{"60 KiB fits", 60 << 10, false},
		{"65 KiB exceeds", 65 << 10, true},
		{"200 KiB exceeds", 200 << 10, true}, // under net/http's 1 MiB default
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Get(headerServer(t, tt.size))
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatal("request succeeded")
			}
			// Pins net/http's wording for the MaxResponseHeaderBytes refusal.
			if !strings.Contains(err.Error(), "server response headers exceeded 65536 bytes") {
				t.Errorf("err = %v, want the header limit", err)
			}
		})
	}
}

func TestHTTP2Negotiated(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.1/32"), testTimeout)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool

	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(body) != "HTTP/2.0" {
		t.Errorf("protocol %s, server saw %q; want HTTP/2", resp.Proto, body)
	}
}

func TestTLSMinimum(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := guard.NewClientWithPolicy(mustPolicy(t, "127.0.0.1/32"), testTimeout)
	tr := c.Transport.(*http.Transport)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr.TLSClientConfig.RootCAs = pool

	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("TLS 1.1 server accepted")
	}
	if !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("err = %v, want a protocol version failure", err)
	}
}

// TestNewClientUsesDefaultAtDialTime: SetDefault after NewClient governs the
// client's later dials.
func TestNewClientUsesDefaultAtDialTime(t *testing.T) {
	t.Cleanup(func() { guard.SetDefault(nil) })
	srv, hits := countingServer(t)
	c := guard.NewClient(testTimeout)

	_, err := c.Get(srv.URL)
	wantDenied(t, err, "loopback")

	guard.SetDefault(mustPolicy(t, "127.0.0.1/32"))
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := hits.Load(); n != 1 {
		t.Errorf("server received %d requests, want 1", n)
	}
}
