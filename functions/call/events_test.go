package main

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

const (
	dlqURL    = "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-call-dlq"
	requestID = "8f5c2a4e-7b1d-4c3e-9a2f-000000000002"
)

// fakeServer is an MCP server in memory: Connect opens connections that
// answer every call with a text block naming the tool and its arguments,
// or with result when set.
type fakeServer struct {
	runnertest.Connector[Conn]

	mu      sync.Mutex
	result  *mcp.CallResult
	callErr error
	stats   mcp.Stats
	calls   []string // "tool args"
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

// fakeCatalog holds tool names by catalog id, each catalog at version
// <id>-v1 with protocol version 2025-11-25; nil names mean only failures
// were recorded.
type fakeCatalog struct {
	tools map[string][]string
	hints map[string]*mcp.Annotations // by tool name
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
	found := slices.Contains(names, tool)
	m := catalog.Membership{Found: found, Version: id + "-v1", ProtocolVersion: "2025-11-25"}
	if found {
		m.Annotations = c.hints[tool]
	}
	return m, nil
}

// fakeStale grants one re-discovery per catalog (later ones are
// deduplicated) and answers the call's vaults.
type fakeStale struct {
	mu      sync.Mutex
	granted map[string]bool
	fail    error
}

func (s *fakeStale) StaleRequest(_ context.Context, id string, vaultIDs []string) (schedule.Request, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return schedule.Request{}, false, s.fail
	}
	if s.granted[id] {
		return schedule.Request{}, false, nil
	}
	if s.granted == nil {
		s.granted = map[string]bool{}
	}
	s.granted[id] = true
	return schedule.Request{CatalogID: id, VaultIDs: vaultIDs}, true, nil
}

// fakeRediscoveries records the discover requests sent.
type fakeRediscoveries struct {
	mu   sync.Mutex
	sent []schedule.Request
}

func (r *fakeRediscoveries) Send(_ context.Context, req schedule.Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, req)
	return nil
}

// env is a call function over fakes: a fake MCP server and catalog, an
// in-memory ledger and secrets, and recording Step Functions and SQS.
type env struct {
	*runnertest.Fakes
	server  *fakeServer
	catalog *fakeCatalog
	ledger  *ledger.Memory
	stale   *fakeStale
	queue   *fakeRediscoveries
	handler *Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		Fakes:   runnertest.NewFakes(requestID),
		server:  &fakeServer{stats: mcp.Stats{ProtocolVersion: "2025-11-25", ServerName: "mcpfn-example", ServerVersion: "1.0.0", Requests: 3, ResponseBytes: 412}},
		catalog: &fakeCatalog{tools: map[string][]string{"example": {"current_time", "calculate", "word_stats"}, "failed": nil}},
		ledger:  ledger.NewMemory(5 * time.Minute),
		stale:   &fakeStale{},
		queue:   &fakeRediscoveries{},
	}
	e.server.Conn = fakeConn{e.server}
	e.handler = &Handler{
		Connect:       e.server.Connect,
		Catalog:       e.catalog,
		Credentials:   vault.NewResolver(e.Secrets, "mcpfn/vaults/"),
		Ledger:        e.ledger,
		Stale:         e.stale,
		Rediscoveries: e.queue,
		Metrics:       e.Metrics,
		Logger:        e.Logger,
	}
	e.Start(t, runner.Config{Function: "call", DLQURL: dlqURL}, e.handler)
	return e
}

// TestEvents runs every events/call-*.json through the handler over fakes
// and compares what it produced, and the calls that reached the server,
// with testdata/events/<name>.json. The vault example-oauth holds an
// expired mcp_oauth token for the sample server, refreshed at a loopback
// authorization server (seedOAuthVault).
func TestEvents(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	runnertest.Events(t, "../../events/call-*.json", func(t *testing.T, payload []byte) any {
		e := newEnv(t)
		e.catalog.tools["example-oauth"] = e.catalog.tools["example"]
		vaults, oauth := runnertest.SeedOAuthVault(t, e.Fakes, as)
		e.handler.Credentials = vaults
		seedPending(t, e, payload)
		inv := e.Invoke(t, payload)
		calls := slices.Clone(e.server.calls)
		slices.Sort(calls)
		return struct {
			runnertest.Invocation
			ServerCalls   []string                    `json:"server_calls"`
			Rediscoveries []schedule.Request          `json:"rediscoveries,omitempty"`
			OAuthVault    *runnertest.OAuthVaultState `json:"oauth_vault,omitempty"`
		}{inv, calls, e.queue.sent, oauth.State(t)}
	})
}
