package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
	"github.com/mcpfn/mcpfn/shared/work"
	"github.com/mcpfn/mcpfn/shared/work/worktest"
)

const (
	dlqURL    = "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-call-dlq"
	requestID = "8f5c2a4e-7b1d-4c3e-9a2f-000000000002"
)

// fakeServer is an MCP server in memory: connect (a work.ConnectFunc)
// opens connections that answer every call with a text block naming the
// tool and its arguments, or with result when set.
type fakeServer struct {
	mu         sync.Mutex
	result     *mcp.CallResult
	connectErr error
	callErr    error
	stats      mcp.Stats
	configs    []mcp.Config
	calls      []string // "tool args"
}

type fakeConn struct{ s *fakeServer }

func (c fakeConn) CallTool(_ context.Context, name string, args json.RawMessage) (*mcp.CallResult, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.calls = append(c.s.calls, name+" "+string(args))
	if c.s.callErr != nil {
		return nil, c.s.callErr
	}
	if c.s.result != nil {
		return c.s.result, nil
	}
	if args == nil {
		args = json.RawMessage("{}")
	}
	return &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: name + " called with " + string(args)}}}, nil
}
func (c fakeConn) Stats() mcp.Stats { return c.s.stats }
func (c fakeConn) Close() error     { return nil }

func (s *fakeServer) connect(_ context.Context, cfg mcp.Config) (Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configs = append(s.configs, cfg)
	if s.connectErr != nil {
		return nil, s.connectErr
	}
	return fakeConn{s}, nil
}

// fakeCatalog holds tool names by catalog id, each catalog at version
// <id>-v1 with protocol version 2025-11-25; nil names mean only failures
// were recorded.
type fakeCatalog struct {
	tools map[string][]string
	fail  error
}

func (c *fakeCatalog) Lookup(_ context.Context, id, tool string) (catalog.Membership, error) {
	if c.fail != nil {
		return catalog.Membership{}, c.fail
	}
	names, ok := c.tools[id]
	switch {
	case !ok:
		return catalog.Membership{}, catalog.ErrNotFound
	case names == nil: // only failed discoveries recorded
		return catalog.Membership{}, nil
	}
	return catalog.Membership{Found: slices.Contains(names, tool), Version: id + "-v1", ProtocolVersion: "2025-11-25"}, nil
}

// env is a call function over fakes: a fake MCP server and catalog, an
// in-memory ledger and secrets, and recording Step Functions and SQS.
type env struct {
	server  *fakeServer
	catalog *fakeCatalog
	ledger  *ledger.Memory
	secrets *vaulttest.Secrets
	tasks   *worktest.Tasks
	queue   *worktest.Queue
	logs    *worktest.Lines
	handler *Handler
	runner  *work.Runner
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		server:  &fakeServer{stats: mcp.Stats{ProtocolVersion: "2025-11-25", ServerName: "mcpfn-example", ServerVersion: "1.0.0", Requests: 3, ResponseBytes: 412}},
		catalog: &fakeCatalog{tools: map[string][]string{"example": {"current_time", "calculate", "word_stats"}, "failed": nil}},
		ledger:  ledger.NewMemory(5 * time.Minute),
		secrets: &vaulttest.Secrets{},
		tasks:   &worktest.Tasks{},
		queue:   &worktest.Queue{},
		logs:    &worktest.Lines{},
	}
	logger := slog.New(slog.NewJSONHandler(e.logs, nil))
	e.handler = &Handler{
		Connect:     e.server.connect,
		Catalog:     e.catalog,
		Credentials: vault.NewResolver(e.secrets, "mcpfn/vaults/"),
		Ledger:      e.ledger,
		Logger:      logger,
	}
	var err error
	e.runner, err = work.NewRunner(work.Config{
		Function: "call",
		DLQURL:   dlqURL,
		Queue:    e.queue,
		Tasks:    e.tasks,
		Logger:   logger,
		Metrics:  &worktest.Lines{},
	}, e.handler)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) invoke(t *testing.T, payload []byte) worktest.Invocation {
	t.Helper()
	ctx, cancel := worktest.Context(t.Context(), requestID, time.Minute)
	defer cancel()
	return worktest.Invoke(ctx, e.runner.Handle, payload, e.tasks, e.queue, e.logs)
}

// TestEvents runs every events/call-*.json through the handler over fakes
// and compares what it produced, and the calls that reached the server,
// with testdata/events/<name>.json.
func TestEvents(t *testing.T) {
	files, err := filepath.Glob("../../events/call-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no call events: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				inv := e.invoke(t, payload)
				calls := slices.Clone(e.server.calls)
				slices.Sort(calls)
				got := struct {
					worktest.Invocation
					ServerCalls []string `json:"server_calls"`
				}{inv, calls}
				worktest.Golden(t, filepath.Join("testdata", "events", name+".json"), got)
			})
		})
	}
}
