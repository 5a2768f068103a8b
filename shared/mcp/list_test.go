package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func listFrom(t *testing.T, s *scripted) (Listing, *Conn, error) {
	t.Helper()
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	l, err := c.ListTools(testCtx(t, 20*time.Second))
	return l, c, err
}

func TestListToolsRefusesEachHostileEntry(t *testing.T) {
	long := strings.Repeat("n", 129) // one past the MCP specification's 128
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		rawResult(w, id, `{"tools":[
			{"name":"ok","description":"fine","inputSchema":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}},
			null,
			{"name":"bad name","inputSchema":{"type":"object"}},
			{"name":"`+long+`","inputSchema":{"type":"object"}},
			{"name":"ok","description":"second","inputSchema":{"type":"object"}},
			{"name":"string_schema","inputSchema":{"type":"string"}},
			{"name":"no_schema"},
			{"name":"array_schema","inputSchema":[{"type":"object"}]},
			{"name":"untyped_schema","inputSchema":{"properties":{}}},
			{"name":"bad_header","inputSchema":{"type":"object","properties":{"q":{"type":"object","x-mcp-header":"Q"}}}},
			{"name":"last","inputSchema":{"type":"object"}}
		]}`)
	}})
	l, _, err := listFrom(t, s)
	if err != nil {
		t.Fatal(err)
	}
	wantTools := []Tool{
		{Name: "ok", Description: "fine", InputSchema: json.RawMessage(`{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}`)},
		{Name: "last", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	if diff := cmp.Diff(wantTools, l.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	wantRefused := []Refusal{
		{"", reasonNullEntry},
		{"bad name", reasonName},
		{long, reasonName},
		{"ok", reasonDuplicate},
		{"string_schema", reasonSchema},
		{"no_schema", reasonSchema},
		{"array_schema", reasonSchema},
		{"untyped_schema", reasonSchema},
		{"bad_header", reasonSDK + `property "q": x-mcp-header can only be applied to primitive types (integer, string, boolean), got "object"`},
	}
	if diff := cmp.Diff(wantRefused, l.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
}

// TestSDKDropsInvalidToolsAndLogsThem pins what "no silent drops" works
// around: go-sdk v1.8.0 removes null tools and tools with invalid
// x-mcp-header annotations from a tools/list result (filterValidTools) and
// only logs the latter, at level Error, with "tool" and "error" attributes.
func TestSDKDropsInvalidToolsAndLogsThem(t *testing.T) {
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		rawResult(w, id, `{"tools":[null,{"name":"bad_header","inputSchema":{"type":"object","properties":{"q":{"type":"array","x-mcp-header":"Q"}}}},{"name":"ok","inputSchema":{"type":"object"}}]}`)
	}})
	log := &dropLog{}
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "0"}, &sdk.ClientOptions{Logger: slogNew(log)})
	cs, err := client.Connect(testCtx(t, 5*time.Second), &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: loopback(t, s.URL, 5*time.Second), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(testCtx(t, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "ok" {
		t.Errorf("SDK kept %d tools, want only \"ok\"", len(res.Tools))
	}
	if got := log.drops()["bad_header"]; !strings.Contains(got, "x-mcp-header") {
		t.Errorf("logged reason for bad_header = %q, want the x-mcp-header error", got)
	}
}

func TestValidatorRefusesEntryThatDoesNotRemarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool *sdk.Tool
	}{
		{"schema", &sdk.Tool{Name: "nan_schema", InputSchema: map[string]any{"type": "object", "default": math.NaN()}}},
		{"entry", &sdk.Tool{Name: "nan_meta", InputSchema: map[string]any{"type": "object"}, Meta: sdk.Meta{"x": math.Inf(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newValidator()
			v.consider(tc.tool, nil)
			if len(v.listing.Tools) != 0 || len(v.listing.Refused) != 1 || !strings.HasPrefix(v.listing.Refused[0].Reason, reasonMarshal) {
				t.Errorf("listing = %+v, want one %q refusal", v.listing, reasonMarshal)
			}
		})
	}
}

func TestListToolsZeroToolsIsNotAnError(t *testing.T) {
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		rawResult(w, id, `{"tools":[]}`)
	}})
	l, _, err := listFrom(t, s)
	if err != nil || len(l.Tools)+len(l.Refused) != 0 {
		t.Errorf("ListTools = %+v, %v; want an empty listing and no error", l, err)
	}
}

func pagedList(next func(cursor string) string) func(http.ResponseWriter, json.RawMessage, string) {
	return func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		result := map[string]any{"tools": []any{map[string]any{"name": "t" + fmt.Sprint(len(cursor)), "inputSchema": map[string]any{"type": "object"}}}}
		if n := next(cursor); n != "" {
			result["nextCursor"] = n
		}
		writeResult(w, id, result)
	}
}

func TestListToolsPageLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		next  func(cursor string) string
		want  error
		pages int
	}{
		{"101 pages", func(c string) string { return c + "x" }, ErrTooManyPages, 100},
		{"100 pages are fine", func(c string) string {
			if len(c) == 99 {
				return ""
			}
			return c + "x"
		}, nil, 100},
		{"repeating cursor", func(string) string { return "same" }, ErrCursorLoop, 2},
		{"cursor back to an earlier page", func(c string) string {
			if c == "" {
				return "a"
			}
			return map[string]string{"a": "b", "b": "a"}[c]
		}, ErrCursorLoop, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serveScripted(t, &scripted{list: pagedList(tc.next)})
			_, _, err := listFrom(t, s)
			if !errors.Is(err, tc.want) || (tc.want != nil && !errors.Is(err, ErrProtocol)) {
				t.Errorf("err = %v, want %v wrapping ErrProtocol", err, tc.want)
			}
			if got := s.count("tools/list"); got != tc.pages {
				t.Errorf("tools/list requests = %d, want %d", got, tc.pages)
			}
		})
	}
}

// TestListToolsManySmallResponsesExhaustTheBudget: 100 KiB pages stay far
// below any per-response cap and the page limit, but not below the
// cumulative budget.
func TestListToolsManySmallResponsesExhaustTheBudget(t *testing.T) {
	desc := strings.Repeat("d", 100<<10)
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		writeResult(w, id, map[string]any{
			"tools":      []any{map[string]any{"name": "t", "description": desc, "inputSchema": map[string]any{"type": "object"}}},
			"nextCursor": cursor + "x",
		})
	}})
	_, c, err := listFrom(t, s)
	if !errors.Is(err, ErrBudgetExceeded) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrBudgetExceeded wrapping ErrProtocol", err)
	}
	if pages := s.count("tools/list"); pages < 70 || pages > 90 {
		t.Errorf("tools/list requests = %d, want about 8 MiB / 100 KiB", pages)
	}
	if got := c.Stats().ResponseBytes; got <= MaxResponseBytes || got > MaxResponseBytes+200<<10 {
		t.Errorf("ResponseBytes = %d, want just past %d", got, MaxResponseBytes)
	}
	if _, err := c.CallTool(testCtx(t, 5*time.Second), "t", nil); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("CallTool after the budget = %v, want ErrBudgetExceeded", err)
	}
}

// TestListToolsChunkedMultiGiBBodyKeepsHeapBounded: a chunked tools/list
// body that would run to 4 GiB is cut at the budget; the heap never holds
// more than a small multiple of it, and the server stops writing.
func TestListToolsChunkedMultiGiBBodyKeepsHeapBounded(t *testing.T) {
	var written atomic.Int64
	chunk := []byte(strings.Repeat("x", 64<<10))
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"description":"`, id)
		for written.Load() < 4<<30 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	_, err := c.ListTools(testCtx(t, 20*time.Second))
	close(stop)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("err = %v, want ErrBudgetExceeded", err)
	}
	if grew := int64(peak.Load()) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB during the listing, want under 64 MiB", grew>>20)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("the listing allocated %d MiB in total, want under 256 MiB", alloc>>20)
	}
	c.Close()
	if w := written.Load(); w > 1<<30 {
		t.Errorf("server wrote %d MiB, want it stopped soon after the client left", w>>20)
	}
}

func TestListToolsReportsJSONRPCErrorAsProtocol(t *testing.T) {
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		writeError(w, id, -32603, "boom")
	}})
	_, _, err := listFrom(t, s)
	if !errors.Is(err, ErrProtocol) || errors.Is(err, ErrServerAnswered) {
		t.Errorf("err = %v, want ErrProtocol and not ErrServerAnswered", err)
	}
}

func TestListToolsRecoversSDKPanic(t *testing.T) {
	s := serveScripted(t, &scripted{list: pagedList(func(string) string { return "" })})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	orig := listPage
	listPage = func(context.Context, *sdk.ClientSession, *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
		panic("decoder exploded")
	}
	defer func() { listPage = orig }()
	_, err := c.ListTools(testCtx(t, 5*time.Second))
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "decoder exploded") {
		t.Errorf("err = %v, want ErrProtocol naming the panic", err)
	}
}

// TestListToolsSeesEntriesTheSDKServesFromItsCache: under 2026-07-28 the
// SDK caches a tools/list page for its ttlMs and serves a repeat listing
// without a request; the entries it dropped from that page are still
// reported.
func TestListToolsSeesEntriesTheSDKServesFromItsCache(t *testing.T) {
	s := serveScripted(t, &scripted{modern: true, list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		rawResult(w, id, `{"ttlMs":60000,"tools":[null,{"name":"ok","inputSchema":{"type":"object"}}]}`)
	}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	want := Listing{
		Tools:   []Tool{{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Refused: []Refusal{{"", reasonNullEntry}},
	}
	for i := range 2 {
		l, err := c.ListTools(testCtx(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, l, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("listing %d (-want +got):\n%s", i+1, diff)
		}
	}
	if got := s.count("tools/list"); got != 1 {
		t.Errorf("tools/list requests = %d, want 1 (the second listing from the SDK's cache)", got)
	}
}

// TestMayBeCached: only a ttlMs that is a positive number, its key
// escaped or not, lets the SDK cache a page; the last key wins.
func TestMayBeCached(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"tools":[]}`:                           false,
		`{"ttlMs":60000,"tools":[]}`:             true,
		`{"\u0074tlMs":60000,"tools":[]}`:        true,
		`{"ttl\u004ds":1}`:                       true,
		`{"ttlMs":0}`:                            false,
		`{"ttlMs":-5}`:                           false,
		`{"ttlMs":null}`:                         false,
		`{"ttlMs":0.5}`:                          true,
		`{"ttlMs":1,"ttlMs":0}`:                  false,
		`{"tools":[{"description":"ttlMs: 5"}]}`: false,
		`{"tools":[{"description":"\u003c"}]}`:   false,
		`{"ttlms":5}`:                            false,
	} {
		if got := mayBeCached([]byte(raw)); got != want {
			t.Errorf("mayBeCached(%s) = %v, want %v", raw, got, want)
		}
	}
}
