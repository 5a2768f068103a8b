package catalog_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

func testRoundTrip(t *testing.T, s catalogtest.Store) {
	l := catalogtest.Listing(3, "a")
	l.Tools[1].InputSchema = json.RawMessage("{ \"type\": \"object\",\n \"description\": \"<b>&amp;</b> \\u00e9\" }")
	l.Tools[2].Description = ""
	l.Refused = []mcp.Refusal{{Name: "bad", Reason: "inputSchema is not an object"}}
	res := catalogtest.MustPut(t, s, "rt", catalogtest.Discover(l, 0))
	if res.Version == "" || res.Unchanged || res.Superseded {
		t.Fatalf("Put = %+v, want a new version", res)
	}
	added := &catalog.Changes{Added: []string{"tool-0", "tool-1", "tool-2"}, Removed: []string{}, Changed: []string{}, AddedCount: 3}
	if diff := cmp.Diff(catalog.PutResult{Version: res.Version, ToolCount: 3, Refused: l.Refused, Changes: added}, res); diff != "" {
		t.Errorf("PutResult (-want +got):\n%s", diff)
	}
	c := catalogtest.MustGet(t, s, "rt")
	catalogtest.AssertContent(t, c, l)
	want := catalog.Catalog{
		ID: "rt", Version: res.Version, ProtocolVersion: "2025-11-25",
		ServerName: "fixture", ServerVersion: "1.0.0", DiscoveredAt: catalogtest.T0, CheckedAt: catalogtest.T0,
		Changes: added, ChangedAt: catalogtest.T0,
	}
	got := *c
	got.Tools, got.Refused, got.ContentHash = nil, nil, ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}
	if c.ContentHash == "" {
		t.Error("ContentHash is empty")
	}
	found := catalog.Membership{Found: true, Version: res.Version, ProtocolVersion: "2025-11-25"}
	for _, tool := range l.Tools {
		assertLookup(t, s, "rt", tool.Name, found)
	}
	missing := catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "rt", "bad", missing) // refused, so not a member
	assertLookup(t, s, "rt", "tool-3", missing)
	assertLookup(t, s, "rt", "", missing)
	catalogtest.AssertOnlyVersion(t, s, "rt", res.Version)
}

func testEmpty(t *testing.T, s catalogtest.Store) {
	res := catalogtest.MustPut(t, s, "empty", catalogtest.Discover(mcp.Listing{}, 0))
	c := catalogtest.MustGet(t, s, "empty")
	catalogtest.AssertContent(t, c, mcp.Listing{})
	assertLookup(t, s, "empty", "tool-0", catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"})
	again := catalogtest.MustPut(t, s, "empty", catalogtest.Discover(mcp.Listing{}, time.Minute))
	if !again.Unchanged || again.Version != res.Version {
		t.Errorf("second empty Put = %+v, want unchanged %s", again, res.Version)
	}
}

func testReplace(t *testing.T, s catalogtest.Store) {
	a := catalogtest.Listing(3, "a")
	b := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("x", "b"), catalogtest.Tool("tool-0", "b")}}
	ra := catalogtest.MustPut(t, s, "rep", catalogtest.Discover(a, 0))
	rb := catalogtest.MustPut(t, s, "rep", catalogtest.Discover(b, time.Minute))
	if rb.Unchanged || rb.Superseded || rb.Version == ra.Version {
		t.Fatalf("replacing Put = %+v after %s, want a new version", rb, ra.Version)
	}
	if rb.Version <= ra.Version {
		t.Errorf("versions %q then %q do not sort by start", ra.Version, rb.Version)
	}
	c := catalogtest.MustGet(t, s, "rep")
	catalogtest.AssertContent(t, c, b)
	if c.Version != rb.Version || !c.DiscoveredAt.Equal(catalogtest.T0.Add(time.Minute)) {
		t.Errorf("catalog version %s discovered %s, want %s at %s", c.Version, c.DiscoveredAt, rb.Version, catalogtest.T0.Add(time.Minute))
	}
	m := catalog.Membership{Version: rb.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "rep", "tool-1", m) // only in a
	m.Found = true
	assertLookup(t, s, "rep", "x", m)
	catalogtest.AssertOnlyVersion(t, s, "rep", rb.Version)
}

func testUnchanged(t *testing.T, s catalogtest.Store) {
	a := catalogtest.Listing(30, "a")
	ra := catalogtest.MustPut(t, s, "same", catalogtest.Discover(a, 0))
	d := catalogtest.Discover(a, time.Hour)
	d.ServerVersion, d.ProtocolVersion = "1.1.0", "2026-07-28"
	res := catalogtest.MustPut(t, s, "same", d)
	if diff := cmp.Diff(catalog.PutResult{Version: ra.Version, Unchanged: true, ToolCount: 30}, res); diff != "" {
		t.Errorf("unchanged Put (-want +got):\n%s", diff)
	}
	c := catalogtest.MustGet(t, s, "same")
	catalogtest.AssertContent(t, c, a)
	if !c.DiscoveredAt.Equal(catalogtest.T0) || !c.CheckedAt.Equal(catalogtest.T0.Add(time.Hour)) {
		t.Errorf("discovered %s checked %s, want %s and %s", c.DiscoveredAt, c.CheckedAt, catalogtest.T0, catalogtest.T0.Add(time.Hour))
	}
	if c.ServerVersion != "1.1.0" || c.ProtocolVersion != "2026-07-28" {
		t.Errorf("server %s protocol %s, want the check's 1.1.0 and 2026-07-28", c.ServerVersion, c.ProtocolVersion)
	}
	assertLookup(t, s, "same", "tool-29", catalog.Membership{Found: true, Version: ra.Version, ProtocolVersion: "2026-07-28"})
	catalogtest.AssertOnlyVersion(t, s, "same", ra.Version)
}

func testOlderLoses(t *testing.T, s catalogtest.Store) {
	newer := catalogtest.Listing(2, "new")
	rn := catalogtest.MustPut(t, s, "old", catalogtest.Discover(newer, time.Minute))
	for _, l := range []mcp.Listing{catalogtest.Listing(3, "old"), newer} {
		res := catalogtest.MustPut(t, s, "old", catalogtest.Discover(l, 0))
		if diff := cmp.Diff(catalog.PutResult{Version: rn.Version, Superseded: true, ToolCount: len(l.Tools)}, res); diff != "" {
			t.Errorf("older Put (-want +got):\n%s", diff)
		}
	}
	c := catalogtest.MustGet(t, s, "old")
	catalogtest.AssertContent(t, c, newer)
	if !c.CheckedAt.Equal(catalogtest.T0.Add(time.Minute)) {
		t.Errorf("checked %s, want the newer start %s", c.CheckedAt, catalogtest.T0.Add(time.Minute))
	}
	catalogtest.AssertOnlyVersion(t, s, "old", rn.Version)
}

func testSameStart(t *testing.T, s catalogtest.Store) {
	a, b := catalogtest.Listing(2, "a"), catalogtest.Listing(2, "b")
	ra := catalogtest.MustPut(t, s, "tie", catalogtest.Discover(a, 0))
	rb := catalogtest.MustPut(t, s, "tie", catalogtest.Discover(b, 0))
	c := catalogtest.MustGet(t, s, "tie")
	if rb.Superseded {
		if rb.Version != ra.Version {
			t.Errorf("superseded Put reports %s, want the winner %s", rb.Version, ra.Version)
		}
		catalogtest.AssertContent(t, c, a)
	} else {
		catalogtest.AssertContent(t, c, b)
	}
	catalogtest.AssertOnlyVersion(t, s, "tie", c.Version)
}

func testRace(t *testing.T, s catalogtest.Store) {
	const writers, rounds = 6, 3
	for round := range rounds {
		id := fmt.Sprintf("race-%d", round)
		results := make([]catalog.PutResult, writers)
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range writers {
			wg.Go(func() {
				start.Wait()
				l := catalogtest.Listing(40+i, fmt.Sprintf("w%d", i))
				res, err := s.Put(context.Background(), id, catalogtest.Discover(l, time.Duration(writers-i)*time.Second))
				if err != nil {
					t.Errorf("writer %d: %v", i, err)
				}
				results[i] = res
			})
		}
		start.Done()
		wg.Wait()

		if t.Failed() {
			return
		}
		// Writer 0's discovery started last.
		c := catalogtest.MustGet(t, s, id)
		catalogtest.AssertContent(t, c, catalogtest.Listing(40, "w0"))
		if results[0].Superseded || results[0].Version != c.Version {
			t.Errorf("latest discovery's Put = %+v, want the winning version %s", results[0], c.Version)
		}
		for i, r := range results[1:] {
			if r.Superseded && r.Version == "" {
				t.Errorf("writer %d superseded without the winner's version", i+1)
			}
			if !r.Superseded && r.Version == c.Version {
				t.Errorf("writer %d reports the winner's version %s as its own", i+1, r.Version)
			}
		}
		catalogtest.AssertOnlyVersion(t, s, id, c.Version)
	}
}

// incompressible returns n bytes of base64 text from random bytes.
func incompressible(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:n]
}

func testOversized(t *testing.T, s catalogtest.Store) {
	l := mcp.Listing{Tools: []mcp.Tool{
		catalogtest.Tool("small", "x"),
		{Name: "plain", Description: incompressible(380_000), InputSchema: json.RawMessage(`{}`)},                      // fits uncompressed
		{Name: "zipped", Description: incompressible(450_000), InputSchema: json.RawMessage(`{}`)},                     // fits only compressed
		{Name: "repetitive", Description: strings.Repeat("lorem ipsum ", 100_000), InputSchema: json.RawMessage(`{}`)}, // 1.2 MB, compresses well
		{Name: "huge", Description: incompressible(700_000), InputSchema: json.RawMessage(`{}`)},                       // too large even compressed
		catalogtest.Tool("after", "x"),
	}}
	res := catalogtest.MustPut(t, s, "big-tool", catalogtest.Discover(l, 0))
	if res.ToolCount != 5 || len(res.Refused) != 1 || res.Refused[0].Name != "huge" {
		t.Fatalf("Put = count %d refused %v, want 5 tools and huge refused", res.ToolCount, res.Refused)
	}
	var plain, zipped, limit int
	_, err := fmt.Sscanf(res.Refused[0].Reason, "tool definition too large to store: %d bytes, %d bytes compressed, over the %d-byte item limit", &plain, &zipped, &limit)
	if err != nil || plain < 700_000 || zipped <= catalog.MaxItemBytes || limit != catalog.MaxItemBytes {
		t.Errorf("huge refused with %q (%v), want too large to store, over %d bytes even compressed", res.Refused[0].Reason, err, catalog.MaxItemBytes)
	}
	want := mcp.Listing{Tools: append(append([]mcp.Tool{}, l.Tools[:4]...), l.Tools[5]), Refused: res.Refused}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "big-tool"), want)
	for _, tool := range l.Tools {
		m, err := s.Lookup(context.Background(), "big-tool", tool.Name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Found != (tool.Name != "huge") {
			t.Errorf("Lookup(%s).Found = %t", tool.Name, m.Found)
		}
	}
}

func testDuplicates(t *testing.T, s catalogtest.Store) {
	second := catalogtest.Tool("a", "second")
	l := mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("a", "first"), catalogtest.Tool("b", "x"), second}}
	res := catalogtest.MustPut(t, s, "dup", catalogtest.Discover(l, 0))
	if res.ToolCount != 2 || len(res.Refused) != 1 || res.Refused[0].Name != "a" ||
		!strings.Contains(res.Refused[0].Reason, "duplicate") {
		t.Fatalf("Put = count %d refused %v, want 2 tools and the second a refused as a duplicate", res.ToolCount, res.Refused)
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "dup"), mcp.Listing{Tools: l.Tools[:2], Refused: res.Refused})
}

func testFailure(t *testing.T, s catalogtest.Store) {
	ctx := context.Background()
	a := catalogtest.Listing(5, "a")
	ra := catalogtest.MustPut(t, s, "fail", catalogtest.Discover(a, 0))
	f1 := catalog.Failure{ErrorType: "mcp_connection_failed_error", Message: "dial: refused", At: catalogtest.T0.Add(2 * time.Minute)}
	f0 := catalog.Failure{ErrorType: "mcp_protocol_error", Message: "older", At: catalogtest.T0.Add(time.Minute)}
	for _, f := range []catalog.Failure{f1, f0} {
		if err := s.RecordFailure(ctx, "fail", f); err != nil {
			t.Fatalf("RecordFailure: %v", err)
		}
	}
	c := catalogtest.MustGet(t, s, "fail")
	catalogtest.AssertContent(t, c, a)
	if c.Version != ra.Version {
		t.Errorf("version %s after a failure, want %s", c.Version, ra.Version)
	}
	if diff := cmp.Diff(&f1, c.LastFailure); diff != "" {
		t.Errorf("last failure, an older one recorded after it (-want +got):\n%s", diff)
	}
	assertLookup(t, s, "fail", "tool-4", catalog.Membership{Found: true, Version: ra.Version, ProtocolVersion: "2025-11-25"})

	b := catalogtest.Listing(2, "b")
	rb := catalogtest.MustPut(t, s, "fail", catalogtest.Discover(b, 3*time.Minute))
	c = catalogtest.MustGet(t, s, "fail")
	catalogtest.AssertContent(t, c, b)
	if c.Version != rb.Version {
		t.Errorf("version %s, want %s", c.Version, rb.Version)
	}
	if diff := cmp.Diff(&f1, c.LastFailure); diff != "" {
		t.Errorf("last failure after a success (-want +got):\n%s", diff)
	}
	catalogtest.AssertOnlyVersion(t, s, "fail", rb.Version)
}

func testFailureFirst(t *testing.T, s catalogtest.Store) {
	ctx := context.Background()
	f := catalog.Failure{ErrorType: "mcp_authentication_failed_error", Message: "401", At: catalogtest.T0}
	if err := s.RecordFailure(ctx, "new", f); err != nil {
		t.Fatalf("RecordFailure: %v", err)
	}
	c := catalogtest.MustGet(t, s, "new")
	if diff := cmp.Diff(&catalog.Catalog{ID: "new", LastFailure: &f}, c); diff != "" {
		t.Errorf("failure-only catalog (-want +got):\n%s", diff)
	}
	assertLookup(t, s, "new", "tool-0", catalog.Membership{})
	a := catalogtest.Listing(2, "a")
	ra := catalogtest.MustPut(t, s, "new", catalogtest.Discover(a, time.Minute))
	c = catalogtest.MustGet(t, s, "new")
	catalogtest.AssertContent(t, c, a)
	if c.Version != ra.Version || c.LastFailure == nil {
		t.Errorf("after a success: version %s failure %v, want %s and the failure kept", c.Version, c.LastFailure, ra.Version)
	}
}

func testNotFound(t *testing.T, s catalogtest.Store) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.Lookup(ctx, "nope", "x"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Lookup of an unknown id: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"", strings.Repeat("x", catalog.MaxIDBytes+1), "\xff"} {
		errs := []error{
			func() error { _, err := s.Get(ctx, id); return err }(),
			func() error { _, err := s.Lookup(ctx, id, "x"); return err }(),
			func() error {
				_, err := s.Put(ctx, id, catalogtest.Discover(catalogtest.Listing(1, "a"), 0))
				return err
			}(),
			s.RecordFailure(ctx, id, catalog.Failure{ErrorType: "x"}),
		}
		for i, err := range errs {
			if !errors.Is(err, catalog.ErrInvalidID) {
				t.Errorf("call %d with id of %d bytes: %v, want ErrInvalidID", i, len(id), err)
			}
		}
	}
	long := strings.Repeat("é", catalog.MaxIDBytes/2) // the longest valid id
	catalogtest.MustPut(t, s, long, catalogtest.Discover(catalogtest.Listing(1, "a"), 0))
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, long), catalogtest.Listing(1, "a"))
}

// generation g of testReaders: 4+3g tools and one refusal, all tagged g.
func generation(g int) mcp.Listing {
	l := catalogtest.Listing(4+3*g, fmt.Sprintf("g%d", g))
	l.Refused = []mcp.Refusal{{Name: "r", Reason: fmt.Sprintf("g%d", g)}}
	return l
}

func testReaders(t *testing.T, s catalogtest.Store) {
	const generations, readers = 10, 3
	catalogtest.MustPut(t, s, "rw", catalogtest.Discover(generation(0), 0))
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				c, err := s.Get(context.Background(), "rw")
				if err != nil {
					t.Errorf("Get during writes: %v", err)
					return
				}
				var g int
				if _, err := fmt.Sscanf(c.Refused[0].Reason, "g%d", &g); err != nil {
					t.Errorf("refusal %v: %v", c.Refused, err)
					return
				}
				for i := range c.Tools {
					c.Tools[i].ModelName = ""
				}
				if diff := cmp.Diff(generation(g).Tools, c.Tools); diff != "" {
					t.Errorf("read a mixed or partial version of generation %d (-want +got):\n%s", g, diff)
					return
				}
			}
		})
	}
	for g := 1; g <= generations; g++ {
		catalogtest.MustPut(t, s, "rw", catalogtest.Discover(generation(g), time.Duration(g)*time.Second))
	}
	close(done)
	wg.Wait()
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "rw"), generation(generations))
}

// bigListing returns 10,000 tools whose stored form totals about
// mcp.MaxResponseBytes.
func bigListing() mcp.Listing {
	const n = 10_000
	pad := strings.Repeat("p", mcp.MaxResponseBytes/n-120)
	l := mcp.Listing{Tools: make([]mcp.Tool, n)}
	for i := range n {
		l.Tools[i] = mcp.Tool{
			Name:        fmt.Sprintf("tool-%05d", i),
			Description: fmt.Sprintf("tool %d", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"` + pad + `"}}}`),
		}
	}
	return l
}

// testBig stores a 10,000-tool catalog of about mcp.MaxResponseBytes in s and
// reads it back. Against moto it takes seconds: give it its own server.
func testBig(t *testing.T, s catalogtest.Store) {
	l := bigListing()
	res := catalogtest.MustPut(t, s, "big", catalogtest.Discover(l, 0))
	if res.ToolCount != len(l.Tools) || len(res.Refused) != 0 {
		t.Fatalf("Put = %d tools, %d refused; want %d and none", res.ToolCount, len(res.Refused), len(l.Tools))
	}
	catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "big"), l)
	found := catalog.Membership{Found: true, Version: res.Version, ProtocolVersion: "2025-11-25"}
	assertLookup(t, s, "big", "tool-00000", found)
	assertLookup(t, s, "big", "tool-09999", found)
	assertLookup(t, s, "big", "tool-10000", catalog.Membership{Version: res.Version, ProtocolVersion: "2025-11-25"})
	again := catalogtest.MustPut(t, s, "big", catalogtest.Discover(l, time.Minute))
	if !again.Unchanged || again.Version != res.Version {
		t.Errorf("second Put = %+v, want unchanged", again)
	}
}

// testServerDiscovery: the latest discovery's server/discover answer is
// kept, on a new version and on an unchanged check, and cleared by one
// without (the server moved to the legacy era); one that is not JSON or
// too large is not kept.
func testServerDiscovery(t *testing.T, s catalogtest.Store) {
	const answer = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`
	a, b := catalogtest.Listing(3, "a"), catalogtest.Listing(3, "b")
	steps := []struct {
		listing   mcp.Listing
		discovery string
		want      string
	}{
		{a, answer, answer},              // new version
		{a, "", ""},                      // unchanged, now legacy
		{a, answer, answer},              // unchanged, modern again
		{b, `{"supportedVersions":`, ""}, // new version, broken answer
		{a, answer, answer},              // new version
		{a, `{"instructions":"` + strings.Repeat("x", mcp.MaxDiscoveryBytes) + `"}`, ""}, // unchanged, too large
	}
	for i, st := range steps {
		d := catalogtest.Discover(st.listing, time.Duration(i)*time.Minute)
		d.ServerDiscovery = st.discovery
		res := catalogtest.MustPut(t, s, "primed", d)
		if got := catalogtest.MustGet(t, s, "primed").ServerDiscovery; got != st.want {
			t.Errorf("step %d: Get's ServerDiscovery = %.40q, want %.40q", i, got, st.want)
		}
		assertLookup(t, s, "primed", "tool-0", catalog.Membership{Found: true, Version: res.Version, ProtocolVersion: d.ProtocolVersion, ServerDiscovery: st.want})
	}
}
