package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogTools is the size of the catalog issue 11 reported: 8,000 valid
// tools in about 7.5 MB, inside the budget.
const catalogTools = 8000

// catalogPages returns the raw tools/list results of a catalog of n tools,
// perPage to a page, keyed by the cursor that asks for each, and their
// total size.
func catalogPages(n, perPage int) (map[string][]byte, int) {
	pages := map[string][]byte{}
	total := 0
	for start, cursor := 0, ""; start < n; start += perPage {
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		for i := start; i < min(start+perPage, n); i++ {
			if i > start {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"tool_%04d","description":"Looks up record %d of the %s service and returns its fields as JSON. Use it when the user names a specific record by id; it does not search, and it never changes anything on the server it reads from. Answers within a second.",`+
				`"inputSchema":{"type":"object","properties":{`+
				`"id":{"type":"string","description":"The record id, e.g. rec-%d."},`+
				`"fields":{"type":"array","items":{"type":"string"},"description":"Fields to return; all when empty."},`+
				`"include_archived":{"type":"boolean","default":false,"description":"Also look among archived records."},`+
				`"limit":{"type":"integer","minimum":1,"maximum":100,"default":10},`+
				`"format":{"type":"string","enum":["json","csv","table"],"description":"How to render the fields."},`+
				`"since":{"type":"string","format":"date-time","description":"Only records changed since this instant (RFC 3339), in the server's clock."}},`+
				`"required":["id"],"additionalProperties":false}}`, i, i, fillerTopics[i%len(fillerTopics)], i)
		}
		b.WriteString(`]`)
		next := ""
		if start+perPage < n {
			next = "c" + strconv.Itoa(start+perPage)
			fmt.Fprintf(&b, `,"nextCursor":%q`, next)
		}
		b.WriteString(`}`)
		pages[cursor] = []byte(b.String())
		total += b.Len()
		cursor = next
	}
	return pages, total
}

var fillerTopics = []string{"invoice", "customer", "shipment", "ticket", "report", "calendar", "inventory", "payment"}

// catalogServer serves pages as written, without marshaling per request.
func catalogServer(t testing.TB, pages map[string][]byte) *scripted {
	return serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":`))
		w.Write(pages[cursor])
		w.Write([]byte(`}`))
	}})
}

// listingMemory is what one ListTools cost in heap, above the live heap
// before it.
type listingMemory struct {
	peak     uint64 // the largest live heap at a checkpoint
	retained uint64 // live heap with the listing held, after it
	total    uint64 // bytes allocated during the listing
}

// liveHeap collects garbage and returns the heap the collection found live
// (/gc/heap/live:bytes).
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// measureListing lists c once and measures the live heap at checkpoints
// the listing goroutine runs itself: when the SDK returns a page (its
// decoding, our raw copy and the listing so far live) and when the page is
// checked (the page's accepted schemas added). Collections run there see
// no concurrent allocation, so the figures repeat; a collection run from
// another goroutine counts what the SDK allocates during its mark as live,
// tens of MiB of noise. What the SDK holds only inside its call, between
// checkpoints, is not seen.
func measureListing(t *testing.T, c *Conn) (Listing, listingMemory) {
	t.Helper()
	var peak uint64
	checkpoint := func() { peak = max(peak, liveHeap()) }
	origList, origChecked := listPage, pageChecked
	listPage = func(ctx context.Context, cs *sdk.ClientSession, p *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
		res, err := origList(ctx, cs, p)
		checkpoint()
		return res, err
	}
	pageChecked = checkpoint
	defer func() { listPage, pageChecked = origList, origChecked }()

	var before, after runtime.MemStats
	base := liveHeap()
	runtime.ReadMemStats(&before)
	l, err := c.ListTools(testCtx(t, 60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	live := liveHeap()
	runtime.ReadMemStats(&after)
	mem := listingMemory{total: after.TotalAlloc - before.TotalAlloc}
	if peak > base {
		mem.peak = peak - base
	}
	if live > base {
		mem.retained = live - base
	}
	runtime.KeepAlive(l)
	return l, mem
}

// TestListingMemory measures one listing of the issue-11 catalog, in one
// page and in go-sdk's default pages of 1000, and holds the live heap's
// growth at its checkpoints to 3 times the wire size (it was 6.8 times for
// the single page before the SDK was handed stand-in schemas).
func TestListingMemory(t *testing.T) {
	for _, perPage := range []int{catalogTools, 1000} {
		t.Run(fmt.Sprintf("%d per page", perPage), func(t *testing.T) {
			pages, wire := catalogPages(catalogTools, perPage)
			if wire < 7<<20 || wire > MaxResponseBytes-64<<10 {
				t.Fatalf("catalog is %d bytes, want about 7.5 MB and inside the budget", wire)
			}
			s := catalogServer(t, pages)
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
			l, mem := measureListing(t, c)
			if len(l.Tools) != catalogTools || len(l.Refused) != 0 {
				t.Fatalf("listing: %d tools, %d refused; want %d and none", len(l.Tools), len(l.Refused), catalogTools)
			}
			ratio := func(n uint64) float64 { return float64(n) / float64(wire) }
			t.Logf("wire %.1f MiB: live heap at checkpoints +%.1f MiB (%.1fx), retained +%.1f MiB (%.1fx), allocated %.1f MiB (%.1fx)",
				float64(wire)/(1<<20), float64(mem.peak)/(1<<20), ratio(mem.peak),
				float64(mem.retained)/(1<<20), ratio(mem.retained), float64(mem.total)/(1<<20), ratio(mem.total))
			if limit := 3 * uint64(wire); mem.peak > limit {
				t.Errorf("live heap grew by %.1f MiB for a %.1f MiB listing, want at most 3x", float64(mem.peak)/(1<<20), float64(wire)/(1<<20))
			}
		})
	}
}

// TestSlimmedListingMatchesTheSDKsDecoding: a page answered as JSON, which
// the SDK is handed with stand-in schemas, lists exactly what the same page
// answered on an SSE stream lists (slimmed too;
// TestSlimmedStreamMatchesTheSDKsDecoding compares with the SDK's own
// decoding).
func TestSlimmedListingMatchesTheSDKsDecoding(t *testing.T) {
	page := `{"tools":[
		{"name":"plain","description":"<&> \u00e9","inputSchema":{"type":"object","properties":{"b":{"type":"number","default":1e2},"a":{"type":"integer","maximum":-0,"minimum":1.5e-7}}}},
		null,
		{"name":"escaped_key","inputSchema":{"type":"object","properties":{"q":{"type":"string","x\u002dmcp-header":"Q"}}}},
		{"name":"bad_escaped_header","inputSchema":{"type":"object","properties":{"q":{"type":"object","x\u002dmcp-header":"Q"}}}},
		{"name":"header","inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}}},
		{"name":"twice","inputSchema":{"type":"string"},"inputSchema":{"type":"object","title":"second"}},
		{"name":"dup_keys","inputSchema":{"type":"string","type":"object"}},
		{"name":"not_object","inputSchema":{"type":["object"]}},
		{"name":"array","inputSchema":[]},
		{"name":"empty","inputSchema":{}},
		{"name":"no_schema"},
		{"name":"deep","inputSchema":{"type":"object","properties":{"x":{"items":{"items":{"items":{"enum":[null,true,"s",0.1,[]]}}}}}}},
		{"name":"plain","inputSchema":{"type":"object"}},
		{"name":"after","description":"the last","inputSchema":{"type":"object","$defs":{"u":{"const":"\ud83d\ude00 \u2028"}}}}
	]}`
	listing := func(sse bool) Listing {
		l, _, err := listFrom(t, serveToolsPage(t, strings.ReplaceAll(page, "\n", ""), sse))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	full, slimmed := listing(true), listing(false)
	if diff := cmp.Diff(full, slimmed); diff != "" {
		t.Errorf("listing (-SSE, decoded by the SDK +JSON, slimmed):\n%s", diff)
	}
	if len(full.Tools) < 5 || len(full.Refused) < 5 {
		t.Errorf("listing = %+v, want several of each", full)
	}
}

// TestSlimToolsListReplacesOnlyWhatTheSDKCannotUse pins which entries the
// SDK is handed as null: objects whose one schema holds no x-mcp-header
// and no \u escape.
func TestSlimToolsListReplacesOnlyWhatTheSDKCannotUse(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
		`{"name":"a","inputSchema":{"type":"object"}},` +
		`{"name":"h","inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}}},` +
		`{"name":"u","inputSchema":{"type":"object","title":"\u0041"}},` +
		`{"name":"d","inputSchema":{"type":"object"},"inputSchema":{"type":"object"}},` +
		`{"name":"s","inputSchema":{}},` +
		`{"name":"n"},` +
		`null,"x"]}}`)
	want := `{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
		`null,` +
		`{"name":"h","inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}}},` +
		`{"name":"u","inputSchema":{"type":"object","title":"\u0041"}},` +
		`{"name":"d","inputSchema":{"type":"object"},"inputSchema":{"type":"object"}},` +
		`null,` +
		`null,` +
		`null,"x"]}}`
	m, ok := readMessage(msg)
	if !ok {
		t.Fatal("readMessage failed")
	}
	if got, taken := slimToolsList(msg, m.result); string(got) != want || taken == 0 {
		t.Errorf("slimToolsList =\n%s, %d\nwant\n%s, a cost", got, taken, want)
	}
	plain := []byte(`{"tools":[{"name":"h","inputSchema":{"x-mcp-header":1}},null]}`)
	if got, taken := slimToolsList(plain, plain); &got[0] != &plain[0] || taken != 0 {
		t.Errorf("slimToolsList of a page with nothing to take = %s, %d; want it as it was, 0", got, taken)
	}
}
