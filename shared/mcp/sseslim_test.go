package mcp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSlimmedStreamMatchesTheSDKsDecoding lists the same page answered on
// an SSE stream, with the SDK decoding it in full and slimmed, and as
// JSON: the three listings are one. The stream frames the answer the ways
// a server may: after a notification, with an id and an event name, split
// over data lines, with CRLF line ends, and as the stream's last event
// with no blank line after it. An ill-typed hint refuses its entry only,
// as in a JSON answer.
func TestSlimmedStreamMatchesTheSDKsDecoding(t *testing.T) {
	page := `{"tools":[
		{"name":"plain","description":"<&> \u00e9","inputSchema":{"type":"object","properties":{"b":{"type":"number","default":1e2},"a":{"type":"integer","maximum":-0}}}},
		null,
		{"name":"header","inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}}},
		{"name":"bad_header","inputSchema":{"type":"object","properties":{"q":{"type":"object","x-mcp-header":"Q"}}}},
		{"name":"twice","inputSchema":{"type":"string"},"inputSchema":{"type":"object","title":"second"}},
		{"name":"not_object","inputSchema":{"type":["object"]}},
		{"name":"spread","inputSchema":{
			"type":"object",
			"properties":{"x":{"items":{"enum":[null,true,"s",0.1,[]]}}}
		}},
		{"name":"after","description":"the last","inputSchema":{"type":"object","$defs":{"u":{"const":"\ud83d\ude00 \u2028"}}}}
	]}`
	frames := map[string]func(msg string) string{
		"one data line": func(msg string) string {
			return "data: " + strings.ReplaceAll(msg, "\n", "") + "\n\n"
		},
		"after a notification, with id and event": func(msg string) string {
			return `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n\n" +
				": a comment\nid: 7\nevent: message\ndata: " + strings.ReplaceAll(msg, "\n", "") + "\nretry: 10\n\n"
		},
		"over data lines, CRLF": func(msg string) string {
			return "id: 1\r\ndata:" + strings.ReplaceAll(msg, "\n", "\r\ndata:  ") + "\r\n\r\n"
		},
		"last, with no blank line": func(msg string) string {
			return "data: " + strings.ReplaceAll(msg, "\n", "\ndata: ")
		},
	}
	listing := func(t *testing.T, page string, frame func(string) string) Listing {
		s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
			msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + page + `}`
			if frame == nil {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(msg))
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(frame(msg)))
		}})
		l, _, err := listFrom(t, s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	illTyped := strings.Replace(page, "null,", `null,{"name":"ill_typed","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object"}},`, 1)
	want, wantIllTyped := listing(t, page, nil), listing(t, illTyped, nil)
	if len(want.Tools) < 4 || len(want.Refused) < 3 || len(wantIllTyped.Refused) != len(want.Refused)+1 {
		t.Fatalf("listings = %+v and %+v, want several of each and one more refusal", want, wantIllTyped)
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			slimmed := listing(t, page, frame)
			slimStreams = false
			full := listing(t, page, frame)
			slimStreams = true
			if diff := cmp.Diff(wantIllTyped, listing(t, illTyped, frame)); diff != "" {
				t.Errorf("listing with an ill-typed hint (-JSON +SSE, slimmed):\n%s", diff)
			}
			if diff := cmp.Diff(want, slimmed); diff != "" {
				t.Errorf("listing (-JSON +SSE, slimmed):\n%s", diff)
			}
			if diff := cmp.Diff(want, full); diff != "" {
				t.Errorf("listing (-JSON +SSE, decoded by the SDK):\n%s", diff)
			}
		})
	}
}

// TestSlimBodyRewritesOnlyTheAnswer reads a stream through slimBody: the
// listing's answer reaches the SDK with its taken entries null and
// every other line of its event as it came; every other event passes byte
// for byte.
func TestSlimBodyRewritesOnlyTheAnswer(t *testing.T) {
	tr := newTransport(nil, &url.URL{Scheme: "http", Host: "127.0.0.1"}, "")
	defer tr.kill()
	op := tr.begin(func(error) {})
	tr.register(request{post: true, key: "n:2", method: "tools/list"})
	x := &exchange{t: tr, op: op}
	other := `{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`
	stream := "data: " + other + "\n\n" +
		": keep-alive\n\n" +
		"id: 3\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[\r\n" +
		"data: {\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}}]}}\r\nretry: 5\r\n\r\n" +
		"event: other\ndata: {}"
	want := "data: " + other + "\n\n" +
		": keep-alive\n\n" +
		"id: 3\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[\n" +
		"data: null]}}\n" +
		"retry: 5\r\n\r\n" +
		"event: other\ndata: {}"
	for _, size := range []int{1, 7, slimReadSize} {
		b := newSlimBody(x, io.NopCloser(&chunked{s: stream, size: size}), "n:2", 1<<20)
		got, err := io.ReadAll(b)
		if err != nil {
			t.Fatalf("reads of %d bytes: %v", size, err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("reads of %d bytes: stream (-want +got):\n%s", size, diff)
		}
	}
}

// chunked reads s at most size bytes at a time.
type chunked struct {
	s    string
	size int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.size)], c.s)
	c.s = c.s[n:]
	return n, nil
}

// TestRedecodeDropsNullEntries: a page the SDK could not decode (an SSE
// answer it reads unslimmed) is decoded again by redecode; a null entry in
// it is refused once and the entries after it keep their own schemas,
// exactly as in a JSON answer.
func TestRedecodeDropsNullEntries(t *testing.T) {
	page := toolsPage(`null`, `{"name":"hint_string","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object"}}`,
		`{"name":"ok","inputSchema":{"type":"object"}}`, `null`, `{"name":"ok2","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`)
	want, _, err := listFrom(t, serveToolsPage(t, page, false))
	if err != nil || len(want.Tools) != 2 || len(want.Refused) != 3 {
		t.Fatalf("JSON listing = %+v, %v; want ok and ok2 and three refusals", want, err)
	}
	slimStreams = false
	defer func() { slimStreams = true }()
	got, _, err := listFrom(t, serveToolsPage(t, page, true))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listing (-JSON +SSE decoded again):\n%s", diff)
	}
}
