package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// Formats of the hostile tools/list answer.
const (
	FormatJSON = "application/json"  // one JSON body
	FormatSSE  = "text/event-stream" // one SSE event carrying the JSON
)

// Formats lists both.
var Formats = []string{FormatJSON, FormatSSE}

// AttackBytes is the size of the hostile answer: 1 GiB.
const AttackBytes = 1 << 30

// HostileHandler serves the stateless mcptest fixture, except that every
// tools/list is answered with a well-formed result of exactly size bytes on
// the wire (chunked, no Content-Length): one tool whose description fills
// the rest, in format. It stops writing when the client goes away.
func HostileHandler(format string, size int64) http.Handler {
	return fixtureExcept(func(w http.ResponseWriter, method string, id json.RawMessage) bool {
		if method != "tools/list" {
			return false
		}
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","inputSchema":{"type":"object"},"description":"`, id)
		tail := `"}]}}`
		if format == FormatSSE {
			head = "event: message\ndata: " + head
			tail += "\n\n"
		}
		w.Header().Set("Content-Type", format)
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, head); err != nil {
			return true
		}
		chunk := []byte(strings.Repeat("x", 256<<10))
		for left := size - int64(len(head)+len(tail)); left > 0; {
			n := min(left, int64(len(chunk)))
			if _, err := w.Write(chunk[:n]); err != nil {
				return true
			}
			left -= n
		}
		_, _ = io.WriteString(w, tail)
		return true
	})
}

// writeResult writes a JSON-RPC result answer to id whose result is the
// JSON result, as one JSON body or one SSE event (format).
func writeResult(w http.ResponseWriter, format string, id json.RawMessage, result []byte) {
	head, tail := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":`, id), "}"
	if format == FormatSSE {
		head, tail = "event: message\ndata: "+head, tail+"\n\n"
	}
	w.Header().Set("Content-Type", format)
	_, _ = io.WriteString(w, head)
	_, _ = w.Write(result)
	_, _ = io.WriteString(w, tail)
}

// fixtureExcept serves the stateless mcptest fixture, except the JSON-RPC
// requests answer answers: it gets each request's method and id and
// reports whether it wrote the answer.
func fixtureExcept(answer func(w http.ResponseWriter, method string, id json.RawMessage) bool) http.Handler {
	fixture, _ := mcptest.NewHandler(mcptest.Options{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fixture.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &msg) == nil && len(msg.ID) > 0 && answer(w, msg.Method, msg.ID) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fixture.ServeHTTP(w, r)
	})
}

// InflatingHandler serves the stateless mcptest fixture, except that every
// tools/list is answered, in format, with one tool whose outputSchema pads
// the answer to about size bytes with empty arrays: small on the wire, and
// about seventy times that once decoded into Go values.
func InflatingHandler(format string, size int) http.Handler {
	pad := strings.Repeat("[],", size/3)
	return fixtureExcept(func(w http.ResponseWriter, method string, id json.RawMessage) bool {
		if method != "tools/list" {
			return false
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"inflated","inputSchema":{"type":"object"},"outputSchema":{"type":"object","x":[%s[]]}}]}}`, id, pad)
		if format == FormatSSE {
			body = "event: message\ndata: " + body + "\n\n"
		}
		w.Header().Set("Content-Type", format)
		_, _ = io.WriteString(w, body)
		return true
	})
}
