package mcp

import (
	"bytes"

	segjson "github.com/segmentio/encoding/json"
)

// The readers in this file decode with the SDK's own JSON library,
// segmentio/encoding: keys match exactly after unescaping, as go-sdk's
// internal/json has them match; the last of a repeated key wins; invalid
// UTF-8 in a string decodes to U+FFFD. A raw value they return aliases the
// input.

// maxJSONDepth is the nesting the readers accept: encoding/json's limit.
// segmentio's parser recurses with no limit of its own
// (TestSegmentioHasNoNestingLimit), so input is measured before it is
// parsed.
const maxJSONDepth = 10000

// parseFlags select exact keys and raw values that alias the input.
const parseFlags = segjson.DontMatchCaseInsensitiveStructFields | segjson.DontCopyRawMessage

// parse decodes the JSON value b, surrounded by whitespace at most, into v
// (a pointer), and reports whether that succeeded. b may nest at most
// maxJSONDepth deep.
func parse(b []byte, v any) bool {
	return shallow(b) && decode(b, v)
}

// decode is parse for a value inside a message that parse accepted, and
// so nests no deeper.
func decode(b []byte, v any) bool {
	rest, err := segjson.Parse(b, v, parseFlags)
	return err == nil && len(rest) == 0
}

// shallow reports whether b nests at most maxJSONDepth objects and arrays,
// counting brackets outside strings (go-sdk's checkMaxDepth). It reads
// anything; for valid JSON the count is exact.
func shallow(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			if i = skipString(b, i); i < 0 {
				return true // unterminated: the parser refuses it
			}
			i--
		case '{', '[':
			if depth++; depth > maxJSONDepth {
				return false
			}
		case '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return true
}

// skipString returns the index just past the string that starts at b[i]
// (a '"'), or -1 when it does not end.
func skipString(b []byte, i int) int {
	start := i + 1
	for i = start; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		k := i // a quote after an odd number of backslashes is escaped
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
	return -1
}

// rpcMessage is the top level of one JSON-RPC message: the raw values of
// "id", "result" and "error" (the last of each, as a map would keep them),
// nil when absent.
type rpcMessage struct {
	id, result, error []byte
}

// readMessage reads payload as json.Unmarshal into
// map[string]json.RawMessage would: false when that fails (invalid JSON,
// nested past maxJSONDepth, or not an object or null).
func readMessage(payload []byte) (rpcMessage, bool) {
	var m struct {
		ID     segjson.RawMessage `json:"id"`
		Result segjson.RawMessage `json:"result"`
		Error  segjson.RawMessage `json:"error"`
	}
	if !parse(payload, &m) {
		return rpcMessage{}, false
	}
	return rpcMessage{id: m.ID, result: m.Result, error: m.Error}, true
}

// readCall reads the "id" and "method" of an outgoing JSON-RPC message as
// json.Unmarshal into struct{ID json.RawMessage; Method string} would, but
// with keys matched exactly: false when that fails.
func readCall(body []byte) (id []byte, method string, ok bool) {
	var m struct {
		ID     segjson.RawMessage `json:"id"`
		Method string             `json:"method"`
	}
	if !parse(body, &m) {
		return nil, "", false
	}
	return m.ID, m.Method, true
}

// stringValue returns the Go string a JSON string literal decodes to, or
// false when raw is not a string. raw is a value readMessage returned, or
// one inside it.
func stringValue(raw []byte) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || !decode(raw, &s) {
		return "", false
	}
	return s, true
}

// counted decodes a member into its raw value (the last, aliasing the
// input) and how many times its key occurs.
type counted struct {
	raw []byte
	n   int
}

// UnmarshalJSON keeps b, which segmentio slices from the input.
func (c *counted) UnmarshalJSON(b []byte) error {
	c.raw, c.n = b, c.n+1
	return nil
}

// members decodes a member into every raw value its key has, in order,
// each aliasing the input.
type members [][]byte

// UnmarshalJSON keeps b, which segmentio slices from the input.
func (m *members) UnmarshalJSON(b []byte) error {
	*m = append(*m, b)
	return nil
}

// last returns the value a map keeps (the last), or nil when the key is
// absent.
func (m members) last() []byte {
	if len(m) == 0 {
		return nil
	}
	return m[len(m)-1]
}
