package mcp

import (
	"fmt"
	"strings"
	"testing"
)

// listingAnswer is a tools/list answer of n tools with schemas of about
// 700 bytes each.
func listingAnswer(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":2,"result":{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"tool_%d","description":"%s","inputSchema":{"type":"object","properties":{`, i, strings.Repeat("does a thing ", 10))
		for j := range 8 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"field_%d":{"type":"string","description":"the %d-th field of the request"}`, j, j)
		}
		b.WriteString(`},"required":["field_0"]}}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkSpanAnswered is what a traced request's span adds to reading
// its answer, a 50-tool tools/list page the transport has read once for
// itself (before, the span read it again: about 130 µs).
func BenchmarkSpanAnswered(b *testing.B) {
	page := listingAnswer(50)
	m, ok := readMessage(page)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		s := &mcpSpan{key: "n:2", op: Operation{Method: "tools/list"}}
		s.answered(m, ok)
	}
}
