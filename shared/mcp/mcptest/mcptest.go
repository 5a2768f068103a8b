// Package mcptest is internal/mcpfixture for tests: the same fixture
// servers (tools, options, counters and the Tasks extension; see that
// package), and NewServer, which serves one for the length of a test.
package mcptest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/mcpfixture"
)

// The fixture's names, as mcpfixture defines them.
const (
	Name            = mcpfixture.Name
	Version         = mcpfixture.Version
	Challenge       = mcpfixture.Challenge
	TasksExtension  = mcpfixture.TasksExtension
	SleepResult     = mcpfixture.SleepResult
	ToolTaskSleep   = mcpfixture.ToolTaskSleep
	ToolTaskFail    = mcpfixture.ToolTaskFail
	ToolTaskAsk     = mcpfixture.ToolTaskAsk
	ToolTaskForever = mcpfixture.ToolTaskForever
	ToolAskTwice    = mcpfixture.ToolAskTwice
)

// The fixture's content, as mcpfixture defines it.
var (
	PNG = mcpfixture.PNG
	WAV = mcpfixture.WAV
	PDF = mcpfixture.PDF
)

// The fixture's types.
type (
	Options  = mcpfixture.Options
	Counters = mcpfixture.Counters
	Tasks    = mcpfixture.Tasks
	Trace    = mcpfixture.Trace
)

// NewHandler is mcpfixture.NewHandler.
func NewHandler(opts Options) (http.Handler, *Counters) { return mcpfixture.NewHandler(opts) }

// LoopbackClient is mcpfixture.LoopbackClient.
func LoopbackClient(rawURL string, timeout time.Duration) (*http.Client, error) {
	return mcpfixture.LoopbackClient(rawURL, timeout)
}

// Method is mcpfixture.Method.
func Method(r *http.Request) (string, error) { return mcpfixture.Method(r) }

// Server is a running fixture server on 127.0.0.1. It counts HTTP
// requests, the JSON-RPC methods it was sent, and tool executions.
type Server struct {
	*Counters
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string

	client *http.Client
}

// NewServer starts a fixture server on 127.0.0.1; tb.Cleanup closes it and
// every MCP session a client left open.
func NewServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	h, counters, server := mcpfixture.NewHandlerAndServer(opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	tb.Cleanup(func() {
		ts.Close()
		for ss := range server.Sessions() {
			ss.Close()
		}
	})
	client, err := LoopbackClient(ts.URL, 30*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(client.CloseIdleConnections)
	return &Server{Counters: counters, URL: ts.URL + "/mcp", client: client}
}

// Client returns a guarded client whose policy allows this server's
// address and port only, with a 30 s request cap.
func (s *Server) Client() *http.Client { return s.client }
