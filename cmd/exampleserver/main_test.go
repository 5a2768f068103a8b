package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
)

// connect opens a client session to url over a transport of its own. Call
// hangUp to close the session and every connection the transport holds.
func connect(t *testing.T, url string) (cs *mcp.ClientSession, hangUp func()) {
	t.Helper()
	cs, hangUp, err := dial(t, url, "")
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	return cs, hangUp
}

// dial is connect with a bearer token ("" sends none) that returns the
// error.
func dial(t *testing.T, url, token string) (cs *mcp.ClientSession, hangUp func(), err error) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearerTransport{token, tr}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err = c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: rt},
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	hangUp = func() {
		cs.Close()
		tr.CloseIdleConnections()
	}
	t.Cleanup(hangUp)
	return cs, hangUp, nil
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestTools(t *testing.T) {
	fixed := time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC)
	server := newServer(func() time.Time { return fixed })
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	cs, _ := connect(t, ts.URL)

	tests := []struct {
		name     string
		tool     string
		args     string
		wantText string
		wantOut  string // structuredContent; "" for a tool error
	}{
		{"time in UTC by default", "current_time", `{}`,
			"2026-11-29T22:30:00Z (Sunday, UTC)", `{"time":"2026-11-29T22:30:00Z","timezone":"UTC","weekday":"Sunday"}`},
		{"time in a zone", "current_time", `{"timezone":"Asia/Tokyo"}`,
			"2026-11-30T07:30:00+09:00 (Monday, Asia/Tokyo)", `{"time":"2026-11-30T07:30:00+09:00","timezone":"Asia/Tokyo","weekday":"Monday"}`},
		{"unknown zone is a tool error", "current_time", `{"timezone":"Mars/Olympus"}`, `unknown time zone "Mars/Olympus"`, ""},
		{"add", "calculate", `{"op":"add","a":2,"b":40}`, "42", `{"result":42}`},
		{"divide", "calculate", `{"op":"divide","a":1,"b":4}`, "0.25", `{"result":0.25}`},
		{"divide by zero is a tool error", "calculate", `{"op":"divide","a":1,"b":0}`, "division by zero: 1 / 0", ""},
		{"unknown op is a tool error", "calculate", `{"op":"pow","a":2,"b":3}`, `unknown op "pow"`, ""},
		{"overflow is a tool error", "calculate", `{"op":"multiply","a":1e308,"b":10}`, "has no finite result", ""},
		{"word stats", "word_stats", `{"text":"one two\nthree\n"}`,
			"3 words, 14 characters, 2 lines", `{"characters":14,"lines":2,"words":3}`},
		{"empty text", "word_stats", `{"text":""}`, "0 words, 0 characters, 0 lines", `{"characters":0,"lines":0,"words":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.IsError, tt.wantOut == ""; got != want {
				t.Errorf("IsError = %v, want %v", got, want)
			}
			if len(res.Content) != 1 {
				t.Fatalf("got %d content blocks, want 1", len(res.Content))
			}
			text, ok := res.Content[0].(*mcp.TextContent)
			if !ok || !strings.Contains(text.Text, tt.wantText) {
				t.Errorf("content %#v, want text containing %q", res.Content[0], tt.wantText)
			}
			if tt.wantOut == "" {
				return
			}
			got, err := json.Marshal(res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantOut, string(got)); diff != "" {
				t.Errorf("structuredContent (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServe runs the command's serve loop in both protocol eras and checks
// the printed endpoint answers with the three tools and the negotiated
// version.
func TestServe(t *testing.T) {
	for _, tt := range []struct {
		name        string
		stateless   bool
		wantVersion string
	}{
		{"stateful", false, "2025-11-25"},
		{"stateless", true, "2026-07-28"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- serve(ctx, config{addr: "127.0.0.1:0", stateless: tt.stateless}, pw)
				pw.Close()
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatalf("read endpoint line: %v", err)
			}
			go io.Copy(io.Discard, pr)
			url, ok := strings.CutPrefix(strings.TrimSpace(line), "exampleserver: serving ")
			if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
				t.Fatalf("first line %q does not announce a loopback endpoint", line)
			}
			cs, hangUp := connect(t, url)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.wantVersion {
				t.Errorf("negotiated %q, want %q", got, tt.wantVersion)
			}
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff([]string{"calculate", "current_time", "word_stats"}, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			// The client's transport may hold a connection it dialed and
			// never used (a request took another that came free first).
			// Shutdown counts such a connection, one without a request yet,
			// as busy for 5 s; a client that leaves closes it.
			hangUp()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve returned %v after cancel, want nil", err)
			}
		})
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{
		"0.0.0.0:0",   // all interfaces
		":8080",       // all interfaces, host omitted
		"10.0.0.1:80", // private
		"localhost:0", // a name, not an IP
		"127.0.0.1",   // no port
	} {
		err := serve(t.Context(), config{addr: addr}, io.Discard)
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("serve(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
}

// TestServeRequiresAToken: with -oauth-issuer, /mcp answers a request
// without an active token 401 with a challenge naming its RFC 9728
// metadata, which names the issuer; a token the issuer reports active is
// served, a revoked one is not.
func TestServeRequiresAToken(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, config{addr: "127.0.0.1:0", issuer: as.Issuer}, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v after cancel, want nil", err)
		}
	})
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, _ := strings.CutPrefix(strings.TrimSpace(line), "exampleserver: serving ")
	if line, _ := br.ReadString('\n'); !strings.Contains(line, "requires a bearer token from "+as.Issuer) {
		t.Errorf("second line %q does not name the issuer", line)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSuffix(url, "/mcp")

	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantChallenge := `Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("no token: %s, WWW-Authenticate %q; want 401, %q", resp.Status, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}

	resp, err = http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || meta.Resource != url || !cmp.Equal(meta.AuthorizationServers, []string{as.Issuer}) {
		t.Errorf("metadata %+v (%v), want resource %s at %s", meta, err, url, as.Issuer)
	}

	token := as.IssueAccessToken()
	cs, hangUp, err := dial(t, url, token)
	if err != nil {
		t.Fatalf("connect with an active token: %v", err)
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("list tools with an active token: %v", err)
	}
	hangUp()

	as.Revoke(token)
	if _, _, err := dial(t, url, token); err == nil {
		t.Error("connect with a revoked token succeeded")
	}
	if _, _, err := dial(t, url, "at-never-issued"); err == nil {
		t.Error("connect with a token the issuer never issued succeeded")
	}
}

func TestServeRefusesAnUnusableIssuer(t *testing.T) {
	err := serve(t.Context(), config{addr: "127.0.0.1:0", issuer: "http://127.0.0.1:9"}, io.Discard)
	if !errors.Is(err, ErrIssuer) {
		t.Errorf("serve with an unreachable issuer = %v, want ErrIssuer", err)
	}
}
