package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

const (
	dlqURL    = "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-discover-dlq"
	requestID = "8f5c2a4e-7b1d-4c3e-9a2f-000000000001"
)

// exampleListing is what the fake server lists: the example server's tools
// and one entry the client refused.
var exampleListing = mcp.Listing{
	Tools: []mcp.Tool{
		{Name: "current_time", Description: "Returns the current date and time in an IANA time zone.", InputSchema: json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string"}}}`)},
		{Name: "calculate", Description: "Applies add, subtract, multiply or divide to two numbers.", InputSchema: json.RawMessage(`{"type":"object","properties":{"op":{"type":"string"},"a":{"type":"number"},"b":{"type":"number"}},"required":["op","a","b"]}`)},
		{Name: "word_stats", Description: "Counts the words, characters and lines of a text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	},
	Refused: []mcp.Refusal{{Name: "bad tool", Reason: "name: not a valid tool name"}},
}

// fakeServer is an MCP server in memory: Connect opens connections that
// list listing.
type fakeServer struct {
	runnertest.Connector[Conn]

	listing mcp.Listing
	listErr error
	stats   mcp.Stats
}

type fakeConn struct{ s *fakeServer }

func (c fakeConn) ListTools(context.Context) (mcp.Listing, error) { return c.s.listing, c.s.listErr }
func (c fakeConn) Stats() mcp.Stats                               { return c.s.stats }
func (c fakeConn) Close() error                                   { return nil }

// fakeStore is a catalog store whose versions are <id>-v1, <id>-v2, ...
// in order of Put. Fail, when set, fails every call.
type fakeStore struct {
	mu       sync.Mutex
	puts     map[string][]catalog.Discovery
	failures map[string][]catalog.Failure
	fail     error
}

func (s *fakeStore) Put(_ context.Context, id string, d catalog.Discovery) (catalog.PutResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return catalog.PutResult{}, s.fail
	}
	if s.puts == nil {
		s.puts = map[string][]catalog.Discovery{}
	}
	s.puts[id] = append(s.puts[id], d)
	return catalog.PutResult{Version: fmt.Sprintf("%s-v%d", id, len(s.puts[id])), ToolCount: len(d.Listing.Tools), Refused: d.Listing.Refused}, nil
}

// ServerURL answers the server URL of id's last Put with a schedule.
func (s *fakeStore) ServerURL(_ context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.puts[id]) - 1; i >= 0; i-- {
		if sc := s.puts[id][i].Schedule; sc != nil {
			return sc.ServerURL, nil
		}
	}
	return "", fmt.Errorf("%w: catalog %q keeps none", catalog.ErrNoServerURL, id)
}

func (s *fakeStore) RecordFailure(_ context.Context, id string, f catalog.Failure) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.failures == nil {
		s.failures = map[string][]catalog.Failure{}
	}
	s.failures[id] = append(s.failures[id], f)
	return nil
}

// fakeSchedule is a schedule in memory: Sweep answers swept (and err),
// RecordFailure counts each catalog's failures.
type fakeSchedule struct {
	mu       sync.Mutex
	swept    schedule.Swept
	err      error
	sweeps   int
	failures map[string]int
}

func (s *fakeSchedule) Sweep(ctx context.Context, q schedule.Enqueuer, _ time.Time) (schedule.Swept, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweeps++
	var reqs []schedule.Request
	for i := range s.swept.Enqueued {
		reqs = append(reqs, schedule.Request{CatalogID: fmt.Sprintf("due-%d", i)})
	}
	q.Enqueue(ctx, reqs)
	return s.swept, s.err
}

func (s *fakeSchedule) RecordFailure(_ context.Context, id string) (schedule.Backoff, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures == nil {
		s.failures = map[string]int{}
	}
	s.failures[id]++
	return schedule.Backoff{Failures: s.failures[id], RetryAfter: time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)}, nil
}

// fakeQueue records the discover requests it is given.
type fakeQueue struct {
	mu   sync.Mutex
	sent []schedule.Request
}

func (q *fakeQueue) Enqueue(_ context.Context, reqs []schedule.Request) []error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, reqs...)
	return make([]error, len(reqs))
}

// env is a discover function over fakes: a fake MCP server, a fake catalog
// store, in-memory secrets, and recording Step Functions and SQS.
type env struct {
	*runnertest.Fakes
	server   *fakeServer
	store    *fakeStore
	schedule *fakeSchedule
	queue    *fakeQueue
	handler  *Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		Fakes: runnertest.NewFakes(requestID),
		server: &fakeServer{
			listing: exampleListing,
			stats:   mcp.Stats{ProtocolVersion: "2025-11-25", ServerName: "mcpfn-example", ServerVersion: "1.0.0", Requests: 4, ResponseBytes: 1890},
		},
		store:    &fakeStore{},
		schedule: &fakeSchedule{swept: schedule.Swept{Due: 3, Enqueued: 2, BackingOff: 1, Overdue3x: 1, Complete: true}},
		queue:    &fakeQueue{},
	}
	e.server.Conn = fakeConn{e.server}
	e.handler = &Handler{
		Connect:     e.server.Connect,
		Store:       e.store,
		Credentials: vault.NewResolver(e.Secrets, "mcpfn/vaults/"),
		Schedule:    e.schedule,
		Queue:       e.queue,
		Metrics:     e.Metrics,
		Logger:      e.Logger,
	}
	e.Start(t, runner.Config{Function: "discover", DLQURL: dlqURL}, e.handler)
	return e
}

// TestEvents runs every events/discover-*.json through the handler over
// fakes and compares what it produced, stored and recorded with
// testdata/events/<name>.json. The vault example-oauth holds an expired
// mcp_oauth token for the sample server, refreshed at a loopback
// authorization server (seedOAuthVault).
func TestEvents(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	runnertest.Events(t, "../../events/discover-*.json", func(t *testing.T, payload []byte) any {
		e := newEnv(t)
		vaults, oauth := runnertest.SeedOAuthVault(t, e.Fakes, as)
		e.handler.Credentials = vaults
		inv := e.Invoke(t, payload)
		stored := map[string]int{}
		for id, puts := range e.store.puts {
			stored[id] = len(puts[len(puts)-1].Listing.Tools)
		}
		return struct {
			runnertest.Invocation
			StoredTools      map[string]int               `json:"stored_tools,omitempty"`
			RecordedFailures map[string][]catalog.Failure `json:"recorded_failures,omitempty"`
			Enqueued         []schedule.Request           `json:"enqueued,omitempty"`
			OAuthVault       *runnertest.OAuthVaultState  `json:"oauth_vault,omitempty"`
		}{inv, stored, e.store.failures, e.queue.sent, oauth.State(t)}
	})
}

// TestEveryEventHasAHandler: each file in events/ is run by TestEvents here
// or in functions/call.
func TestEveryEventHasAHandler(t *testing.T) {
	files, err := filepath.Glob("../../events/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if !strings.HasSuffix(base, ".json") || !(strings.HasPrefix(base, "discover-") || strings.HasPrefix(base, "call-")) {
			t.Errorf("events/%s: name it discover-*.json or call-*.json so a test runs it", base)
		}
	}
}
