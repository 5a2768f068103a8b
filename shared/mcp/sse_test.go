package mcp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lineTap is the reference the streaming sseTap must agree with: it
// buffers each line, then parses it the way the SDK's scanner does.
type lineTap struct {
	events  []string
	line    []byte
	name    []byte
	data    []byte
	hasData bool
}

func (s *lineTap) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			return
		}
		s.line = append(s.line, p[:i]...)
		s.field(s.line)
		s.line = s.line[:0]
		p = p[i+1:]
	}
}

func (s *lineTap) end() {
	if len(s.line) > 0 {
		s.field(s.line)
		s.line = s.line[:0]
	}
	s.dispatch()
}

func (s *lineTap) field(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		s.dispatch()
		return
	}
	key, value, found := bytes.Cut(line, []byte{':'})
	if !found {
		return
	}
	switch string(key) {
	case "event":
		s.name = append(s.name[:0], bytes.TrimSpace(value)...)
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, bytes.TrimSpace(value)...)
		s.hasData = true
	}
}

func (s *lineTap) dispatch() {
	if len(s.data) > 0 && (len(s.name) == 0 || string(s.name) == "message") {
		s.events = append(s.events, string(s.data))
	}
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
}

// tapBoth feeds stream to both taps in pieces of the given sizes (cycled)
// and returns what each emitted.
func tapBoth(stream []byte, pieces []int) (got, want []string, tap *sseTap) {
	tap = &sseTap{limit: len(stream), onEvent: func(data []byte) { got = append(got, string(data)) }}
	ref := &lineTap{}
	for i, rest := 0, stream; len(rest) > 0; i++ {
		n := len(rest)
		if len(pieces) > 0 {
			n = min(max(pieces[i%len(pieces)], 1), len(rest))
		}
		tap.write(rest[:n])
		ref.write(rest[:n])
		rest = rest[n:]
	}
	tap.end()
	ref.end()
	return got, ref.events, tap
}

var sseSeeds = []string{
	"data: {\"id\":1}\n\n",
	"event: message\ndata: a\ndata:  b \n\n",
	"event: other\ndata: x\n\nevent:message\ndata:y\n\n",
	"id: 7\nretry: 10\ndata: z\r\n\r\n",
	"data:a\r\r\n\r\r\r\ndata:b",
	": comment\ndata\ndata:\ndata: \n\n",
	"data: \u00a0x\u2028\u00a0\n\nevent: \u3000message \ndata: y\n",
	"da\rta: no\nevent\r: no\n\r:x\n\ndata: last",
	"dat: a\ndataa: b\nevents: c\nevent: \n data: d\n\n",
	"\n\n\ndata: one\n\n\n",
	"event: x\nevent: message\ndata: kept\n\n",
	"data: first\nevent: skip\n\ndata: second\n",
}

func TestSSETapMatchesLineParser(t *testing.T) {
	for _, stream := range sseSeeds {
		for _, pieces := range [][]int{nil, {1}, {2}, {3, 1, 7}, {5}} {
			got, want, _ := tapBoth([]byte(stream), pieces)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stream %q in pieces %v: events (-want +got):\n%s", stream, pieces, diff)
			}
		}
	}
}

func FuzzSSETap(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s), uint8(3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, stream []byte, a, b uint8) {
		got, want, _ := tapBoth(stream, []int{int(a), int(b)})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stream %q in pieces %d, %d: events (-want +got):\n%s", stream, a, b, diff)
		}
	})
}

// TestSSETapGrowsNoFurtherThanItsLimit: one event as large as the budget
// left, arriving in 4 KiB reads, never makes the tap's buffer larger than
// that budget.
func TestSSETapGrowsNoFurtherThanItsLimit(t *testing.T) {
	const limit = 1<<20 + 123
	stream := []byte("data: " + strings.Repeat("x", limit-len("data: ")))
	var events int
	tap := &sseTap{limit: limit, onEvent: func([]byte) { events++ }}
	var maxCap int
	for rest := stream; len(rest) > 0; {
		n := min(4096, len(rest))
		tap.write(rest[:n])
		rest = rest[n:]
		maxCap = max(maxCap, cap(tap.data))
	}
	tap.end()
	if events != 1 || maxCap > limit {
		t.Errorf("events = %d, largest buffer = %d bytes; want 1 event and at most %d", events, maxCap, limit)
	}
}
