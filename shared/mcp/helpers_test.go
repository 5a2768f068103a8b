package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// testCtx returns a context that ends well before the test's deadline.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// loopback returns a guarded client that may reach rawURL's loopback port.
func loopback(t testing.TB, rawURL string, timeout time.Duration) *http.Client {
	t.Helper()
	c, err := mcptest.LoopbackClient(rawURL, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func mustConnect(t *testing.T, cfg Config) *Conn {
	t.Helper()
	c, err := Connect(testCtx(t, 10*time.Second), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// scripted is a raw net/http MCP server. It answers the handshake itself
// (legacy by default: server/discover is "method not found", then
// initialize and notifications/initialized; modern: discover negotiates
// 2026-07-28) and hands tools/list, tools/call and GET to hooks.
type scripted struct {
	modern bool
	// discover, when set, answers server/discover instead of the default.
	discover func(w http.ResponseWriter, id json.RawMessage)
	// initialize, when set, answers initialize instead of the default.
	initialize func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage)
	list       func(w http.ResponseWriter, id json.RawMessage, cursor string)
	call       func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage)
	get        func(w http.ResponseWriter, r *http.Request)
	// hang names the methods (JSON-RPC, or "DELETE") never answered: the
	// handler waits until the client goes away.
	hang map[string]bool

	URL string
	ts  *httptest.Server

	active atomic.Int64 // requests being handled

	mu      sync.Mutex
	methods []string
	bodies  map[string][]json.RawMessage // params by method
}

func serveScripted(t testing.TB, s *scripted) *scripted {
	t.Helper()
	s.bodies = map[string][]json.RawMessage{}
	s.ts = httptest.NewServer(s)
	t.Cleanup(s.ts.Close)
	s.URL = s.ts.URL + "/mcp"
	return s
}

func (s *scripted) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.methods)
}

func (s *scripted) count(method string) int {
	n := 0
	for _, m := range s.Methods() {
		if m == method {
			n++
		}
	}
	return n
}

func (s *scripted) params(method string) []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies[method])
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	if r.Method != http.MethodPost {
		s.record(r.Method, nil)
		if s.hang[r.Method] {
			<-r.Context().Done()
			return
		}
		if r.Method == http.MethodGet && s.get != nil {
			s.get(w, r)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.record(msg.Method, msg.Params)
	if s.hang[msg.Method] {
		<-r.Context().Done()
		return
	}
	switch msg.Method {
	case "server/discover":
		if s.discover != nil {
			s.discover(w, msg.ID)
			return
		}
		if !s.modern {
			writeError(w, msg.ID, -32601, "method not found")
			return
		}
		writeResult(w, msg.ID, map[string]any{
			"supportedVersions": []string{"2026-07-28"},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "scripted", "version": "0"}},
		})
	case "initialize":
		if s.initialize != nil {
			s.initialize(w, msg.ID, msg.Params)
			return
		}
		w.Header().Set("Mcp-Session-Id", "scripted-session")
		writeResult(w, msg.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "scripted", "version": "0"},
		})
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		s.list(w, msg.ID, p.Cursor)
	case "tools/call":
		s.call(w, msg.ID, msg.Params)
	default:
		if len(msg.ID) == 0 || msg.Method == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeError(w, msg.ID, -32601, "method not found")
	}
}

func (s *scripted) record(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.methods = append(s.methods, method)
	s.bodies[method] = append(s.bodies[method], params)
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	writeMessage(w, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func writeError(w http.ResponseWriter, id json.RawMessage, code int, message string) {
	writeMessage(w, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
}

func writeMessage(w http.ResponseWriter, msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// rawResult writes a result given as raw JSON.
func rawResult(w http.ResponseWriter, id json.RawMessage, result string) {
	writeResult(w, id, json.RawMessage(result))
}

func slogNew(h slog.Handler) *slog.Logger { return slog.New(h) }

// sdkSession connects a bare go-sdk client, for tests that pin SDK behaviour.
func sdkSession(t *testing.T, url string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "0"}, opts)
	cs, err := client.Connect(testCtx(t, 5*time.Second), &sdk.StreamableClientTransport{
		Endpoint: url, HTTPClient: loopback(t, url, 5*time.Second), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func sdkClient() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "t", Version: "0"}, nil)
}

func sdkTransport(url string, hc *http.Client, disableSSE bool) *sdk.StreamableClientTransport {
	return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: disableSSE}
}
