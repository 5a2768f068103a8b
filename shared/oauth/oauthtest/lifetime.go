package oauthtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Front stands before a Server and writes expires_in of every successful
// token answer exactly as the raw JSON it was given (5, -60, 3599.5,
// "3600s"), for clients facing odd lifetimes. Its metadata names the Front
// as issuer and endpoints; every request passes to the Server, which still
// decides what its tokens are worth. Point a Resource at it with
// ResourceOptions.AuthorizationServers = []string{front.Issuer}.
type Front struct {
	*httptest.Server
	Issuer   string // the Front's base URL
	TokenURL string // Issuer + "/token"
}

// NewFront starts a Front for as on loopback, closed in tb.Cleanup.
func NewFront(tb testing.TB, as *Server, expiresIn string) *Front {
	tb.Helper()
	if !json.Valid([]byte(expiresIn)) {
		tb.Fatalf("oauthtest: expires_in %q is not JSON", expiresIn)
	}
	target, err := url.Parse(as.Issuer)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Front{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		switch {
		case resp.Request.URL.Path == "/.well-known/oauth-authorization-server":
			return rewrite(resp, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(as.Issuer), []byte(f.Issuer)) })
		case resp.Request.URL.Path == "/token" && resp.StatusCode == http.StatusOK:
			return rewrite(resp, func(b []byte) []byte {
				var answer map[string]json.RawMessage
				if json.Unmarshal(b, &answer) != nil {
					return b
				}
				answer["expires_in"] = json.RawMessage(expiresIn)
				out, _ := json.Marshal(answer)
				return out
			})
		}
		return nil
	}
	f.Server = httptest.NewServer(proxy)
	tb.Cleanup(f.Close)
	f.Issuer = f.Server.URL
	f.TokenURL = f.Issuer + "/token"
	return f
}

// AllowEntry is the guard allow entry for the Front's address and port.
func (f *Front) AllowEntry() string { return allowEntry(f.Listener.Addr()) }

// rewrite replaces resp's body with edit of it.
func rewrite(resp *http.Response, edit func([]byte) []byte) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return err
	}
	b = edit(b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.Header.Del("Content-Encoding")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		resp.Header.Set("Content-Type", "application/json")
	}
	return nil
}
