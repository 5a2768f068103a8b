package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/schema"
)

// judgingStore is fakeStore answering, as catalog.Dynamo does, with the
// rules its last Put recorded (Discovery.SchemaRules) for its current
// version, unless older names other rules for that version.
type judgingStore struct {
	*fakeStore
	mu      sync.Mutex
	older   map[string][2]string // id → rules, version recorded in place of the Put's
	reads   int
	readErr error
}

// current returns id's current version, its tools and the rules its Put
// recorded.
func (s *judgingStore) current(id string) (version string, tools []mcp.Tool, rules string) {
	s.fakeStore.mu.Lock()
	defer s.fakeStore.mu.Unlock()
	puts := s.puts[id]
	if len(puts) == 0 {
		return "", nil, ""
	}
	last := puts[len(puts)-1]
	return fmt.Sprintf("%s-v%d", id, len(puts)), last.Listing.Tools, last.SchemaRules
}

func (s *judgingStore) Judged(_ context.Context, id, rules string) (catalog.Judged, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.readErr != nil {
		return catalog.Judged{}, s.readErr
	}
	version, tools, recorded := s.current(id)
	if o, ok := s.older[id]; ok && o[1] == version {
		recorded = o[0]
	}
	if version == "" || recorded != rules {
		return catalog.Judged{}, nil
	}
	return catalog.NewJudged(version, tools), nil
}

// distinctTools returns n tools with distinct input schemas, every third
// with an output schema too.
func distinctTools(n int) []mcp.Tool {
	tools := make([]mcp.Tool, n)
	for i := range tools {
		tools[i] = mcp.Tool{Name: fmt.Sprintf("tool_%d", i), Description: "a tool",
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"p%d":{"type":"string"}}}`, i))}
		if i%3 == 0 {
			tools[i].OutputSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"r%d":{"type":"integer"}}}`, i))
		}
	}
	return tools
}

// schemaCount is the schemas tools list.
func schemaCount(tools []mcp.Tool) int64 {
	n := int64(0)
	for _, t := range tools {
		n++
		if len(t.OutputSchema) > 0 {
			n++
		}
	}
	return n
}

// TestStoredVerdictsSkipChecks: a cold instance (a fresh schema.Cache)
// re-discovering a listing the store records as judged under
// schema.RulesVersion checks none of its schemas; a changed tool has
// exactly its schemas checked; other rules, a refused tool, or a store
// that cannot answer leave the schemas to check.
func TestStoredVerdictsSkipChecks(t *testing.T) {
	bad := mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strng"}}}`)}
	base := append(distinctTools(12), bad)
	all := schemaCount(base)
	changedSchema := slices.Clone(base)
	changedSchema[4].InputSchema = json.RawMessage(`{"type":"object","properties":{"changed":{"type":"string"}}}`)
	changedText := slices.Clone(base)
	changedText[3].Description = "a tool, described anew" // tool_3 has two schemas
	tests := []struct {
		name    string
		rules   string // recorded over the first discovery's ("": as recorded)
		readErr error
		second  []mcp.Tool
		want    int64
	}{
		{name: "unchanged", second: base, want: 1},                         // bad alone: it was refused, not stored
		{name: "one input schema changed", second: changedSchema, want: 2}, // tool_4's new schema, and bad
		{name: "one description changed", second: changedText, want: 3},    // tool_3's two, and bad
		{name: "other rules recorded", rules: "0/older", second: base, want: all},
		{name: "store cannot answer", readErr: errors.New("throttled"), second: base, want: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			store := &judgingStore{fakeStore: e.store}
			e.handler.Store = store
			e.handler.Schemas = schema.NewCache(0)
			e.server.listing = mcp.Listing{Tools: base}
			if got := e.Invoke(t, request(nil)); got.Error != nil {
				t.Fatal(got.Error)
			}
			if got := e.store.puts["example"][0].SchemaRules; got != schema.RulesVersion {
				t.Fatalf("the first Put records rules %q, want schema.RulesVersion", got)
			}
			if tt.rules != "" {
				store.older = map[string][2]string{"example": {tt.rules, "example-v1"}}
			}
			store.readErr = tt.readErr
			e.handler.Schemas = schema.NewCache(0) // a cold instance
			e.server.listing = mcp.Listing{Tools: tt.second}
			if got := e.Invoke(t, request(nil)); got.Error != nil {
				t.Fatal(got.Error)
			}
			if got := e.handler.Schemas.Stats().Checks; got != tt.want {
				t.Errorf("the second discovery checked %d schemas, want %d", got, tt.want)
			}
			l := e.store.puts["example"][1].Listing
			if len(l.Tools) != len(base)-1 || len(l.Refused) != 1 || l.Refused[0].Name != "bad" {
				t.Errorf("stored %d tools and refused %+v; want %d and bad", len(l.Tools), l.Refused, len(base)-1)
			}
			if got := e.store.puts["example"][1].SchemaRules; got != schema.RulesVersion {
				t.Errorf("the second Put records rules %q, want schema.RulesVersion", got)
			}
		})
	}
}

// TestWarmInstanceReadsNoVerdicts: when every schema has a cached verdict
// the store is not asked.
func TestWarmInstanceReadsNoVerdicts(t *testing.T) {
	e := newEnv(t)
	store := &judgingStore{fakeStore: e.store}
	e.handler.Store = store
	e.handler.Schemas = schema.NewCache(0)
	e.server.listing = mcp.Listing{Tools: distinctTools(5)}
	for range 2 {
		if got := e.Invoke(t, request(nil)); got.Error != nil {
			t.Fatal(got.Error)
		}
	}
	if store.reads != 1 {
		t.Errorf("two discoveries on one instance read the stored verdicts %d times, want 1 (the first)", store.reads)
	}
	if got := e.handler.Schemas.Stats(); got.Checks != schemaCount(e.server.listing.Tools) {
		t.Errorf("checks = %+v, want each schema once", got)
	}
}
