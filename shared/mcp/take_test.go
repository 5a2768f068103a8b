package mcp

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTakenEntriesListAsTheSDKDecodesThem: each page is listed three ways,
// answered on an SSE stream that the SDK decodes in full (slimStreams
// off), on a slimmed stream, and as JSON; the listings, or the failures
// (ErrProtocol), are one. The pages mix entries the SDK is handed and
// entries taken from it (rawTool.taken), so that pairing the SDK's list
// with the raw one skips exactly the taken ones, and put in taken entries
// what fails go-sdk's decoding of a whole page. A page nesting past the
// SDK's 1000 levels is decoded here (Conn.redecode), as it was before
// entries were taken.
func TestTakenEntriesListAsTheSDKDecodesThem(t *testing.T) {
	const header = `"inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}}`
	const badHeader = `"inputSchema":{"type":"object","properties":{"q":{"type":"object","x-mcp-header":"Q"}}}`
	deepMeta := func(levels int) string { // an entry nesting levels deep
		return `{"name":"deep","inputSchema":{"type":"object"},"_meta":{"k":` + strings.Repeat("[", levels-2) + strings.Repeat("]", levels-2) + `}}`
	}
	pages := map[string]string{
		"mixed": `{"tools":[
			{"name":"t1","title":"T","description":"d","inputSchema":{"type":"object","required":["a"]},"annotations":{"readOnlyHint":true,"x":1},"_meta":{"m":[1,"<"]}},
			{"name":"bad",` + badHeader + `},
			{"name":"t2","outputSchema":{"type":"object"},"inputSchema":{"type":"object"}},
			{"name":"h1",` + header + `},
			{"name":"t3","outputSchema":"string","inputSchema":{"type":"object"}},
			{"name":"t4","icons":[{"src":"https://example.com/i.png"}],"inputSchema":{"type":"object"}},
			null,
			{"name":"bad2",` + badHeader + `},
			{"n\u0061me":"t5","inputSchema":{"type":"object"}},
			{"name":"t6"},
			{"name":"t7","inputSchema":{"type":"string"}}
		]}`,
		"duplicates across the two": `{"tools":[
			{"name":"a","inputSchema":{"type":"object","title":"taken first"}},
			{"name":"a",` + header + `},
			{"name":"b",` + header + `},
			{"name":"b","inputSchema":{"type":"object","title":"taken second"}}
		]}`,
		"ill-typed optional fields": `{"tools":[
			{"name":"t","title":5,"inputSchema":{"type":"object"}},
			{"name":"u","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object"}},
			{"name":"v","_meta":[],"inputSchema":{"type":"object"}},
			{"name":"h","title":[],` + header + `}
		]}`,
		"ill-typed description":     `{"tools":[{"name":"h",` + header + `},{"name":"t","description":5,"inputSchema":{"type":"object"}}]}`,
		"ill-typed name":            `{"tools":[{"name":7,"inputSchema":{"type":"object"}}]}`,
		"ill-typed icons":           `{"tools":[{"name":"t","icons":"i","inputSchema":{"type":"object"}}]}`,
		"an entry not an object":    `{"tools":[{"name":"t","inputSchema":{"type":"object"}},5]}`,
		"deep, past go-sdk's limit": `{"tools":[` + deepMeta(1200) + `]}`,
	}
	for name, page := range pages {
		t.Run(name, func(t *testing.T) {
			page = strings.NewReplacer("\n", "", "\t", "").Replace(page)
			list := func(sse, slim bool) (Listing, error) {
				slimStreams = slim
				defer func() { slimStreams = true }()
				l, _, err := listFrom(t, serveToolsPage(t, page, sse))
				return l, err
			}
			want, wantErr := list(true, false)
			if wantErr != nil && !errors.Is(wantErr, ErrProtocol) {
				t.Fatalf("decoded by the SDK: %v, want a listing or ErrProtocol", wantErr)
			}
			for _, way := range []struct {
				name string
				sse  bool
			}{{"SSE, slimmed", true}, {"JSON", false}} {
				got, err := list(way.sse, true)
				if (err != nil) != (wantErr != nil) || err != nil && !errors.Is(err, ErrProtocol) {
					t.Errorf("%s: error %v, want the SDK's %v", way.name, err, wantErr)
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: listing (-decoded by the SDK +%s):\n%s", way.name, way.name, diff)
				}
			}
			t.Logf("%d tools, %d refused, error %v", len(want.Tools), len(want.Refused), wantErr)
		})
	}
}

// FuzzTakenEntries: for any page, the validator lists from the SDK's
// decoding of the page with entries taken (slimToolsList) what it lists
// from the SDK's decoding of the page with every entry handed over, each
// schema as a stand-in and each ill-typed optional value null (as before
// entries were taken); and fails where that decoding fails. The SDK's
// page decoding is segmentio's with the SDK's flags, its null entries
// dropped (filterValidTools' x-mcp-header checks are not run: an entry
// that could fail them is never taken).
func FuzzTakenEntries(f *testing.F) {
	for _, seed := range []string{
		`{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"h","inputSchema":{"x-mcp-header":"H"}}]}`,
		`{"tools":[{"name":"a","title":5,"annotations":{"readOnlyHint":"y"},"_meta":[],"inputSchema":{"type":"object","properties":{"b":{}}}},null,5]}`,
		`{"tools":[{"name":"a"},{"name":"a","inputSchema":{"type":"object"},"inputSchema":{}},{"n\u0061me":"b","outputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":7,"inputSchema":{"type":"object"}}],"nextCursor":"c"}`,
		`{"tools":[{"name":"a","description":"d","icons":[{"src":"x"}],"inputSchema":{"type":"object","title":"\u0041"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		if !shallow(page) {
			return
		}
		list := func(handed []byte, took bool) (Listing, bool) {
			var res sdk.ListToolsResult
			if !decode(handed, &res) {
				return Listing{}, false
			}
			res.Tools = slices.DeleteFunc(res.Tools, func(t *sdk.Tool) bool { return t == nil })
			v := newValidator()
			if err := v.page(res.Tools, keptPage{result: page, took: took}, nil); err != nil {
				return Listing{}, false
			}
			return v.listing, true
		}
		var spans []replacement
		if entries, ok := rawEntries(page); ok {
			for _, e := range entries {
				spans = readTool(e).replacements(spans)
			}
		}
		before, ok := splice(page, spans)
		if !ok {
			t.Fatalf("the replacements of %q do not splice", page)
		}
		want, wantOK := list(before, false)
		taken, cost := slimToolsList(page, page)
		got, gotOK := list(taken, cost > 0)
		if gotOK != wantOK {
			t.Fatalf("page %q: listed %t with entries taken, %t without", page, gotOK, wantOK)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("page %q: listing (-without +taken):\n%s", page, diff)
		}
	})
}
