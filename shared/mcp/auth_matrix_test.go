package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireRequest is one HTTP request as a wireLog saw it.
type wireRequest struct {
	Method        string // JSON-RPC method of a POST, else the HTTP method
	Authorization string
	Version       string // MCP-Protocol-Version header
	Offered       string // params.protocolVersion of an initialize
	Denied        int    // status answered instead of the MCP handler, or 0
}

// wireLog records every request it is sent and hands it to next, unless deny
// holds a status: then it answers that status itself, with challenge as
// WWW-Authenticate when set.
type wireLog struct {
	next      http.Handler
	challenge string
	deny      atomic.Int32

	mu   sync.Mutex
	reqs []wireRequest
}

func (l *wireLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := wireRequest{Method: r.Method, Authorization: r.Header.Get("Authorization"),
		Version: r.Header.Get("MCP-Protocol-Version"), Denied: int(l.deny.Load())}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			rec.Method = msg.Method
			if msg.Method == "initialize" {
				rec.Offered = msg.Params.ProtocolVersion
			}
		}
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, rec)
	l.mu.Unlock()
	if rec.Denied != 0 {
		if l.challenge != "" {
			w.Header().Set("WWW-Authenticate", l.challenge)
		}
		http.Error(w, "denied", rec.Denied)
		return
	}
	l.next.ServeHTTP(w, r)
}

func (l *wireLog) requests() []wireRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

func (l *wireLog) methods() []string {
	var m []string
	for _, r := range l.requests() {
		m = append(m, r.Method)
	}
	return m
}

// serveSDKFixture serves a stateful go-sdk v1.8.0 server with opts and the
// tools echo and greet behind a wireLog, on 127.0.0.1; it returns the log
// and the endpoint. Cleanup closes the server and its sessions.
func serveSDKFixture(t *testing.T, opts *sdk.ServerOptions, challenge string) (*wireLog, string) {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "fixture", Version: "2.0.0"}, opts)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	for _, name := range []string{"echo", "greet"} {
		server.AddTool(&sdk.Tool{Name: name, Description: name + "s its text", InputSchema: schema},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var args struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
				if name == "greet" {
					args.Text = "hello " + args.Text
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: args.Text}}}, nil
			})
	}
	log := &wireLog{challenge: challenge,
		next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)}
	ts := httptest.NewServer(log)
	t.Cleanup(func() {
		ts.Close()
		for ss := range server.Sessions() {
			ss.Close()
		}
	})
	return log, ts.URL + "/mcp"
}

// TestUnauthorizedMatrix: 401 and 403, with and without a bearer token, on
// the first exchange and on a listing or call after a handshake that
// succeeded, are each an *UnauthorizedError carrying the status and
// challenge, and nothing else; the token goes out as a bearer header and
// never into the error.
func TestUnauthorizedMatrix(t *testing.T) {
	const (
		token     = "tok-3f9c1e7a-matrix"
		challenge = `Bearer realm="matrix", error="invalid_token", error_description="expired"`
	)
	type phase struct {
		name string
		// denied is the method of the first request answered with the status.
		denied string
		run    func(ctx context.Context, cfg Config, deny func()) error
	}
	phases := []phase{
		{"Connect", "server/discover", func(ctx context.Context, cfg Config, deny func()) error {
			deny()
			c, err := Connect(ctx, cfg)
			if err == nil {
				c.Close()
			}
			return err
		}},
		{"ListTools after the handshake", "tools/list", func(ctx context.Context, cfg Config, deny func()) error {
			c, err := Connect(ctx, cfg)
			if err != nil {
				return fmt.Errorf("handshake: %w", err)
			}
			defer c.Close()
			deny()
			_, err = c.ListTools(ctx)
			return err
		}},
		{"CallTool after the handshake", "tools/call", func(ctx context.Context, cfg Config, deny func()) error {
			c, err := Connect(ctx, cfg)
			if err != nil {
				return fmt.Errorf("handshake: %w", err)
			}
			defer c.Close()
			deny()
			_, err = c.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`))
			return err
		}},
	}
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		for _, tok := range []string{"", token} {
			for _, ph := range phases {
				name := fmt.Sprintf("%d without token/%s", status, ph.name)
				if tok != "" {
					name = fmt.Sprintf("%d with token/%s", status, ph.name)
				}
				t.Run(name, func(t *testing.T) {
					// A 401 carries the challenge; a 403 here carries none, so
					// the error must not invent one.
					wantChallenge := ""
					if status == http.StatusUnauthorized {
						wantChallenge = challenge
					}
					log, url := serveSDKFixture(t, nil, wantChallenge)
					cfg := Config{URL: url, HTTPClient: loopback(t, url, 5*time.Second), BearerToken: tok}
					err := ph.run(testCtx(t, 10*time.Second), cfg, func() { log.deny.Store(int32(status)) })

					var ue *UnauthorizedError
					if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &ue) {
						t.Fatalf("err = %v, want an *UnauthorizedError", err)
					}
					if ue.Status != status || ue.Challenge != wantChallenge {
						t.Errorf("UnauthorizedError{%d, %q}, want {%d, %q}", ue.Status, ue.Challenge, status, wantChallenge)
					}
					if errors.Is(err, ErrServerAnswered) || errors.Is(err, ErrProtocol) {
						t.Errorf("err = %v also wraps ErrServerAnswered or ErrProtocol", err)
					}
					if tok != "" && strings.Contains(err.Error(), tok) {
						t.Errorf("error %q repeats the token", err)
					}

					reqs := log.requests()
					first := slices.IndexFunc(reqs, func(r wireRequest) bool { return r.Denied != 0 })
					if first < 0 || reqs[first].Method != ph.denied {
						t.Errorf("requests %+v: want the first denied one to be %s", reqs, ph.denied)
					}
					wantAuth := ""
					if tok != "" {
						wantAuth = "Bearer " + tok
					}
					for _, r := range reqs {
						if r.Authorization != wantAuth {
							t.Errorf("%s sent Authorization %q, want %q", r.Method, r.Authorization, wantAuth)
						}
					}
				})
			}
		}
	}
}
