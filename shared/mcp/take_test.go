package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
				s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
					msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + page + `}`
					if sse {
						w.Header().Set("Content-Type", "text/event-stream")
						w.Write([]byte("data: " + msg + "\n\n"))
						return
					}
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(msg))
				}})
				l, _, err := listFrom(t, s)
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
