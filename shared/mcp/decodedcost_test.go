package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// answerAs writes one JSON-RPC result, raw, as application/json or as one
// text/event-stream event.
func answerAs(w http.ResponseWriter, sse bool, id json.RawMessage, result []byte) {
	head, tail := `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`, "}"
	ct := "application/json"
	if sse {
		head, tail, ct = "event: message\ndata: "+head, tail+"\n\n", "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	io.WriteString(w, head)
	w.Write(result)
	io.WriteString(w, tail)
}

// emptyArrays is `[[],[],...]` of about n bytes, the shape that costs the
// SDK's decoder most per byte (71x).
func emptyArrays(n int) []byte {
	return []byte("[" + strings.Repeat("[],", n/3-1) + "[]]")
}

// heapPeak samples the heap's objects (live and not yet collected) every
// 200µs until stop is called, and returns the largest growth over the heap
// when it started. Sampled from another goroutine, it bounds the live
// heap from above.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		if p := peak.Load(); p > base {
			return p - base
		}
		return 0
	}
}

// maxHostileHeap is what a refused hostile answer may grow the heap by:
// the raw bytes and their copies (the body, the SSE tap, the SDK's line
// buffer), far below the 570 MiB the SDK's decoder would build.
const maxHostileHeap = 6 * MaxResponseBytes

func checkDecodedBudgetError(t *testing.T, what string, err error, grew uint64, c *Conn) {
	t.Helper()
	if !errors.Is(err, ErrBudgetExceeded) || !errors.Is(err, ErrProtocol) {
		t.Errorf("%s: err = %v, want ErrBudgetExceeded wrapping ErrProtocol", what, err)
	}
	if got := c.Stats().ResponseBytes; got > MaxResponseBytes {
		t.Errorf("%s: ResponseBytes = %d, want the answer inside the byte budget", what, got)
	}
	t.Logf("%s: heap grew by at most %.1f MiB", what, float64(grew)/(1<<20))
	if grew > maxHostileHeap {
		t.Errorf("%s: heap grew by %.1f MiB, want at most %d MiB", what, float64(grew)/(1<<20), maxHostileHeap>>20)
	}
}

// TestDecodedBudgetRefusesInflatingListing: a tools/list page inside
// MaxResponseBytes whose outputSchema or _meta is 7.5 MiB of `[[],[],...]`
// is refused before the SDK decodes it, over JSON and over SSE, and the
// heap stays bounded meanwhile.
func TestDecodedBudgetRefusesInflatingListing(t *testing.T) {
	pad := emptyArrays(7<<20 + 512<<10)
	for _, field := range []string{"outputSchema", "_meta"} {
		value := pad
		if field == "_meta" {
			value = []byte(`{"x":` + string(pad) + `}`)
		}
		page := []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"},"` + field + `":` + string(value) + `}]}`)
		for _, sse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s sse=%v", field, sse), func(t *testing.T) {
				s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
					answerAs(w, sse, id, page)
				}})
				c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
				stop := heapPeak()
				_, err := c.ListTools(testCtx(t, 20*time.Second))
				grew := stop()
				checkDecodedBudgetError(t, "ListTools", err, grew, c)
				if _, err := c.CallTool(testCtx(t, 5*time.Second), "a", nil); !errors.Is(err, ErrBudgetExceeded) {
					t.Errorf("CallTool after the budget = %v, want ErrBudgetExceeded", err)
				}
			})
		}
	}
}

// TestDecodedBudgetRefusesInflatingCallResult: the same for a tools/call
// result whose structuredContent is `[[],[],...]`.
func TestDecodedBudgetRefusesInflatingCallResult(t *testing.T) {
	result := []byte(`{"content":[{"type":"text","text":"ok"}],"structuredContent":` + string(emptyArrays(7<<20+512<<10)) + `}`)
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			s := serveScripted(t, &scripted{call: func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage) {
				answerAs(w, sse, id, result)
			}})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
			stop := heapPeak()
			_, err := c.CallTool(testCtx(t, 20*time.Second), "a", nil)
			grew := stop()
			checkDecodedBudgetError(t, "CallTool", err, grew, c)
		})
	}
}

// nearLimitPage is a tools/list result of 8,000 valid tools of about 950
// bytes each (a name, a description of about 800 bytes, an object schema
// of two properties and a required array): about 7.6 MB, the shape of
// bench's near-limit listing.
func nearLimitPage() []byte {
	schema := `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["query"]}`
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range catalogTools {
		if i > 0 {
			b.WriteByte(',')
		}
		name := fmt.Sprintf("tool_%05d", i)
		desc := fmt.Sprintf("Tool %d: ", i)
		desc += strings.Repeat("d", 965-len(name)-len(desc)-len(schema)-60)
		fmt.Fprintf(&b, `{"name":%q,"description":%q,"inputSchema":%s}`, name, desc, schema)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestDecodedBudgetPassesNearLimitListing: the near-limit listing passes
// in full, answered as JSON and on an SSE stream (which the SDK decodes
// without stand-ins).
func TestDecodedBudgetPassesNearLimitListing(t *testing.T) {
	page := nearLimitPage()
	if len(page) < 7_500_000 || len(page) > 7_700_000 {
		t.Fatalf("page is %d bytes, want about 7.6 MB", len(page))
	}
	t.Logf("page %d bytes, estimated decoded cost %d (%.2fx; budget %d)", len(page), decodedCost(page), float64(decodedCost(page))/float64(len(page)), int64(MaxDecodedCost))
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
				answerAs(w, sse, id, page)
			}})
			l, _, err := listFrom(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tools) != catalogTools || len(l.Refused) != 0 {
				t.Fatalf("listing: %d tools, %d refused; want %d and none", len(l.Tools), len(l.Refused), catalogTools)
			}
		})
	}
}

// TestDecodedCostCoversTheSDKsDecoder calibrates decodedCost's weights:
// for each shape, about 1 MiB of it decoded into `any` by the SDK's
// decoder (segmentio/encoding/json, behind go-sdk's internal/json) retains
// no more than decodedCost says, and the near-limit listing decoded into
// the SDK's ListToolsResult neither; nor does encoding/json, which decodes
// the input schemas the SDK is handed as stand-ins. The log gives each shape's allocation
// and retained heap per wire byte next to the estimate.
func TestDecodedCostCoversTheSDKsDecoder(t *testing.T) {
	shapes := []string{`[]`, `{}`, `{"a":1}`, `1`, `"a"`, `true`, `{"a":[]}`, `[[[]]]`,
		`{"a":"b","c":"d"}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`, `[1,2,3,4,5,6,7,8,9]`}
	measure := func(name string, b []byte, v any) {
		t.Helper()
		unmarshal := segjson.Unmarshal
		if strings.HasPrefix(name, "stdlib ") {
			unmarshal = json.Unmarshal
		}
		var before, after runtime.MemStats
		base := liveHeap()
		runtime.ReadMemStats(&before)
		if err := unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		live := int64(liveHeap()) - int64(base)
		runtime.KeepAlive(v)
		est := decodedCost(b)
		per := func(n int64) float64 { return float64(n) / float64(len(b)) }
		t.Logf("%-28s %8d bytes: allocated %5.1fx, retained %5.1fx, estimated %5.1fx", name, len(b),
			per(int64(after.TotalAlloc-before.TotalAlloc)), per(live), per(est))
		if live > est {
			t.Errorf("%s: decoding retained %d bytes, more than the estimate %d", name, live, est)
		}
	}
	for _, el := range shapes {
		n := (1 << 20) / (len(el) + 1)
		var v any
		b := []byte("[" + strings.Repeat(el+",", n-1) + el + "]")
		measure("["+el+",...]", b, &v)
		v = nil
		measure("stdlib ["+el+",...]", b, &v)
	}
	page := nearLimitPage()
	var v any
	measure("near-limit listing as any", page, &v)
	var r sdk.ListToolsResult
	measure("near-limit ListToolsResult", page, &r)
}

// TestDecodedCostBoundsStandInSchemas: an input schema the SDK is handed
// as a stand-in (a JSON answer) is decoded by the validator, from the raw
// page; one that would decode past MaxDecodedCost is refused undecoded.
func TestDecodedCostBoundsStandInSchemas(t *testing.T) {
	page := []byte(`{"tools":[{"name":"ok","inputSchema":{"type":"object"}},` +
		`{"name":"big","inputSchema":{"type":"object","x":` + string(emptyArrays(7<<20+512<<10)) + `}}]}`)
	s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		answerAs(w, false, id, page)
	}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
	stop := heapPeak()
	l, err := c.ListTools(testCtx(t, 20*time.Second))
	grew := stop()
	if err != nil {
		t.Fatal(err)
	}
	want := Listing{Tools: []Tool{{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}}, Refused: []Refusal{{Name: "big", Reason: reasonCost}}}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	t.Logf("heap grew by at most %.1f MiB", float64(grew)/(1<<20))
	if grew > maxHostileHeap {
		t.Errorf("heap grew by %.1f MiB, want at most %d MiB", float64(grew)/(1<<20), maxHostileHeap>>20)
	}
}

func TestDecodedCostCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{``, 0},
		{`1`, 1},
		{`[]`, 2 + arrayCost},
		{`[ ]`, 3 + arrayCost},
		{`[1,2]`, 5 + arrayCost + 2*valueCost},
		{`{"a":[]}`, 8 + objectCost + arrayCost + valueCost},
		{`{"a":"[,{\"","b":{}}`, 20 + 2*objectCost + 2*valueCost},
		{`["[,{`, 5 + arrayCost + valueCost},
		{`{`, 1 + objectCost},
	} {
		if got := decodedCost([]byte(tc.in)); got != tc.want {
			t.Errorf("decodedCost(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
