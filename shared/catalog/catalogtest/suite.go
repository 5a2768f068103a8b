package catalogtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Store is a catalog store that can list the versions it holds.
type Store interface {
	catalog.Store
	StoredVersions(ctx context.Context, id string) ([]string, error)
}

// T0 is the start time the suite's discoveries count from.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Tool returns a tool named name whose description and schema carry tag
// (a JSON-safe string).
func Tool(name, tag string) mcp.Tool {
	return mcp.Tool{
		Name:        name,
		Description: "tool " + name + " of " + tag,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"tag":{"const":"` + tag + `"}}}`),
	}
}

// Listing returns n tools named tool-0 … tool-(n-1), all carrying tag.
func Listing(n int, tag string) mcp.Listing {
	l := mcp.Listing{Tools: make([]mcp.Tool, n)}
	for i := range n {
		l.Tools[i] = Tool(fmt.Sprintf("tool-%d", i), tag)
	}
	return l
}

// Discover returns a discovery of l started at T0 + offset.
func Discover(l mcp.Listing, offset time.Duration) catalog.Discovery {
	return catalog.Discovery{
		Listing:         l,
		ProtocolVersion: "2025-11-25",
		ServerName:      "fixture",
		ServerVersion:   "1.0.0",
		StartedAt:       T0.Add(offset),
	}
}

// MustPut puts d and fails the test on error.
func MustPut(t testing.TB, s catalog.Store, id string, d catalog.Discovery) catalog.PutResult {
	t.Helper()
	res, err := s.Put(context.Background(), id, d)
	if err != nil {
		t.Fatalf("Put(%q): %v", id, err)
	}
	return res
}

// LookupWant is want as Lookup(name) reports it: Name, the tool's server
// name, only when name is not that name (a lookup by model_name).
func LookupWant(name string, want catalog.Membership) catalog.Membership {
	if want.Name == name {
		want.Name = ""
	}
	return want
}

// MustGet gets id and fails the test on error.
func MustGet(t testing.TB, s catalog.Store, id string) *catalog.Catalog {
	t.Helper()
	c, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return c
}

// ModelNamePattern is what every stored tool's ModelName matches.
var ModelNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// AssertContent fails unless c holds exactly l's tools and refusals, and
// its tools' model names are distinct, match ModelNamePattern and, where
// l gives one, equal l's.
func AssertContent(t testing.TB, c *catalog.Catalog, l mcp.Listing) {
	t.Helper()
	if len(c.Tools) != len(l.Tools) {
		t.Errorf("%d tools, want %d", len(c.Tools), len(l.Tools))
	}
	if c.Tools == nil || c.Refused == nil {
		t.Errorf("nil tools (%t) or refusals (%t) in a stored version", c.Tools == nil, c.Refused == nil)
	}
	// cmp.Diff of 10,000 tools takes seconds: compare, then diff the first
	// mismatch only.
	for i := range min(len(c.Tools), len(l.Tools)) {
		w, g := l.Tools[i], c.Tools[i]
		if w.ModelName == "" {
			g.ModelName = ""
		}
		if !sameTool(w, g) {
			t.Errorf("tool %d (-want +got):\n%s", i, cmp.Diff(w, g))
			break
		}
	}
	AssertModelNames(t, c.Tools)
	wantR := l.Refused
	if wantR == nil {
		wantR = []mcp.Refusal{}
	}
	if diff := cmp.Diff(wantR, c.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
}

// sameTool reports whether a and b are equal, field by field.
func sameTool(a, b mcp.Tool) bool {
	return a.Name == b.Name && a.ModelName == b.ModelName && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Meta, b.Meta) && cmp.Equal(a.Annotations, b.Annotations)
}

// AssertModelNames fails unless every tool's ModelName matches
// ModelNamePattern and is distinct.
func AssertModelNames(t testing.TB, tools []mcp.Tool) {
	t.Helper()
	held := make(map[string]string, len(tools))
	for _, tool := range tools {
		if !ModelNamePattern.MatchString(tool.ModelName) {
			t.Errorf("tool %q has model name %q, not model-safe", tool.Name, tool.ModelName)
		}
		if other, ok := held[tool.ModelName]; ok {
			t.Errorf("tools %q and %q share model name %q", other, tool.Name, tool.ModelName)
		}
		held[tool.ModelName] = tool.Name
	}
}

// AssertOnlyVersion fails unless version is the only one s holds for id.
func AssertOnlyVersion(t testing.TB, s Store, id, version string) {
	t.Helper()
	got, err := s.StoredVersions(context.Background(), id)
	if err != nil {
		t.Fatalf("StoredVersions: %v", err)
	}
	if diff := cmp.Diff([]string{version}, got); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}
}
