package mcp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The scanners in this file read JSON that validJSON accepted, without
// decoding it. Given anything else they report false and never index out
// of range.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i], or -1.
func skipString(b []byte, i int) int {
	start := i + 1
	for i = start; i < len(b) && i < start+16; i++ { // most keys are short
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	for i < len(b) {
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
		i++
	}
	return -1
}

// skipValue returns the index just past the value that starts at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch c := b[i]; {
			case !structural[c]:
			case c == '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case c == '{' || c == '[':
				depth++
			default:
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// structural marks the bytes skipValue stops at inside a container.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// jsonList walks the members of an object or the elements of an array.
type jsonList struct {
	b      []byte
	i      int
	object bool
	n      int
	bad    bool // the input ended or broke before the closing bracket
}

// openList starts walking v, which must be an object (object true) or an
// array, surrounded by whitespace at most.
func openList(v []byte, object bool) (*jsonList, bool) {
	open := byte('[')
	if object {
		open = '{'
	}
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != open {
		return nil, false
	}
	return &jsonList{b: v, i: i + 1, object: object}, true
}

// next returns the next member (key is the quoted key; nil in an array),
// or false at the end of the list or on broken input (then l.bad is set).
func (l *jsonList) next() (key, val []byte, ok bool) {
	if l.bad {
		return nil, nil, false
	}
	closing := byte(']')
	if l.object {
		closing = '}'
	}
	i := skipSpace(l.b, l.i)
	if i < len(l.b) && l.b[i] == closing {
		l.i = i + 1
		return nil, nil, false
	}
	if l.n > 0 {
		if i >= len(l.b) || l.b[i] != ',' {
			l.bad = true
			return nil, nil, false
		}
		i = skipSpace(l.b, i+1)
	}
	if l.object {
		end := -1
		if i < len(l.b) && l.b[i] == '"' {
			end = skipString(l.b, i)
		}
		if end < 0 {
			l.bad = true
			return nil, nil, false
		}
		key = l.b[i:end]
		i = skipSpace(l.b, end)
		if i >= len(l.b) || l.b[i] != ':' {
			l.bad = true
			return nil, nil, false
		}
		i = skipSpace(l.b, i+1)
	}
	end := skipValue(l.b, i)
	if end < 0 {
		l.bad = true
		return nil, nil, false
	}
	l.i, l.n = end, l.n+1
	return key, l.b[i:end], true
}

// nextKey returns the next member's quoted key and stops before its
// value, which the caller then skips or opens; false at the end of the
// object or on broken input.
func (l *jsonList) nextKey() ([]byte, bool) {
	if l.bad {
		return nil, false
	}
	i := skipSpace(l.b, l.i)
	if i < len(l.b) && l.b[i] == '}' {
		l.i = i + 1
		return nil, false
	}
	if l.n > 0 {
		if i >= len(l.b) || l.b[i] != ',' {
			l.bad = true
			return nil, false
		}
		i = skipSpace(l.b, i+1)
	}
	end := -1
	if i < len(l.b) && l.b[i] == '"' {
		end = skipString(l.b, i)
	}
	if end < 0 {
		l.bad = true
		return nil, false
	}
	key := l.b[i:end]
	i = skipSpace(l.b, end)
	if i >= len(l.b) || l.b[i] != ':' {
		l.bad = true
		return nil, false
	}
	l.i, l.n = skipSpace(l.b, i+1), l.n+1
	return key, true
}

// skip skips the value after a key from nextKey.
func (l *jsonList) skip() {
	if end := skipValue(l.b, l.i); end < 0 {
		l.bad = true
	} else {
		l.i = end
	}
}

// openValue starts walking the value after a key from nextKey when it is
// an object (object true) or an array; the caller sets l.i past it when
// done.
func (l *jsonList) openValue(object bool) (*jsonList, bool) {
	open := byte('[')
	if object {
		open = '{'
	}
	if l.i >= len(l.b) || l.b[l.i] != open {
		return nil, false
	}
	return &jsonList{b: l.b, i: l.i + 1, object: object}, true
}

// stringValue returns the Go string a JSON string literal decodes to, as
// encoding/json decodes it (invalid UTF-8 becomes U+FFFD), or false when
// raw is not a string.
func stringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// keyIs reports whether the quoted key raw decodes to want.
func keyIs(raw []byte, want string) bool {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == want
	}
	s, ok := stringValue(raw)
	return ok && s == want
}

// rpcMessage is the top level of one JSON-RPC message: the raw values of
// "id", "result" and "error" (the last of each, as a map would keep them),
// nil when absent.
type rpcMessage struct {
	id, result, error []byte
}

// readMessage reads payload as json.Unmarshal into map[string]json.RawMessage
// would: false when that fails (invalid JSON, or not an object or null).
// The values alias payload.
func readMessage(payload []byte) (rpcMessage, bool) {
	var m rpcMessage
	i := skipSpace(payload, 0)
	i, ok := validValue(payload, i, 0, func(key, val []byte) {
		switch {
		case keyIs(key, "id"):
			m.id = val
		case keyIs(key, "result"):
			m.result = val
		case keyIs(key, "error"):
			m.error = val
		}
	})
	if !ok || skipSpace(payload, i) != len(payload) {
		return rpcMessage{}, false
	}
	v := bytes.TrimSpace(payload)
	return m, v[0] == '{' || string(v) == "null"
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// stringSafe marks the bytes a JSON string holds unescaped: encoding/json
// refuses control characters and checks no UTF-8.
var stringSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validJSON reports what json.Valid reports, faster: b is one JSON value
// surrounded by whitespace at most.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0, nil)
	return ok && skipSpace(b, i) == len(b)
}

// validValue checks the value at b[i] and returns the index past it. When
// that value is an object, member sees each of its members (the quoted key
// and the value) as it is checked.
func validValue(b []byte, i, depth int, member func(key, val []byte)) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth++; depth > maxJSONDepth {
			return i, false
		}
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			var ok bool
			var key []byte
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				start := i
				if i, ok = validString(b, i); !ok {
					return i, false
				}
				key = b[start:i]
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			start := i
			if i, ok = validValue(b, i, depth, nil); !ok {
				return i, false
			}
			if member != nil && c == '{' {
				member(key, b[start:i])
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closing:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return validString(b, i)
	case c == '-' || '0' <= c && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// validString checks the string at b[i] (a '"') and returns the index past it.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		if stringSafe[b[i]] {
			i++
			continue
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default:
			return i, false // a control character
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber checks the number at b[i] and returns the index past it.
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// readCall reads the "id" and "method" of an outgoing JSON-RPC message as
// json.Unmarshal into struct{ID json.RawMessage; Method string} would:
// false when that fails. A key that matches only case-insensitively, or
// needs unescaping, is left to json.Unmarshal.
func readCall(body []byte) (id []byte, method string, ok bool) {
	if !validJSON(body) {
		return nil, "", false
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return nil, "", true
	}
	l, ok := openList(body, true)
	if !ok {
		return nil, "", false
	}
	for key, val, ok := l.next(); ok; key, val, ok = l.next() {
		switch name := key[1 : len(key)-1]; {
		case string(name) == "id":
			id = val
		case string(name) == "method":
			if string(val) == "null" {
				continue
			}
			s, isString := stringValue(val)
			if !isString {
				return nil, "", false
			}
			method = s
		case bytes.IndexByte(name, '\\') >= 0 || !isASCII(name) ||
			bytes.EqualFold(name, []byte("id")) || bytes.EqualFold(name, []byte("method")):
			return readCallSlowly(body)
		}
	}
	return id, method, !l.bad
}

func readCallSlowly(body []byte) ([]byte, string, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil, "", false
	}
	return m.ID, m.Method, true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
