package mcp

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPlainDepth bounds the nesting the plain-value helpers follow; deeper
// values take json.Marshal's path, which detects cycles.
const maxPlainDepth = 1000

// plain reports whether v is built only of what encoding/json decodes into
// an any (nil, bool, finite float64, string, []any, map[string]any), so
// that json.Marshal of it cannot fail.
func plain(v any, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsInf(x, 0) && !math.IsNaN(x)
	case []any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// plainEncoder appends the bytes json.Marshal produces for plain values
// (sorted keys, HTML-safe escaping). Its buffers are reused across calls.
type plainEncoder struct {
	buf     []byte
	members []member // a stack: each map's members sit above its parents'
}

type member struct {
	key string
	val any
}

// encode returns the encoding of v, valid until the next call, or false
// when v is not plain.
func (e *plainEncoder) encode(v any) ([]byte, bool) {
	var ok bool
	e.buf, ok = e.append(e.buf[:0], v, 0)
	return e.buf, ok
}

func (e *plainEncoder) append(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxPlainDepth {
		return dst, false
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case string:
		return appendJSONString(dst, x), true
	case float64:
		return appendJSONFloat(dst, x)
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, elem := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = e.append(dst, elem, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		if len(x) > smallMap {
			return e.appendLargeMap(dst, x, depth)
		}
		// Members of a small map stay in arrays on the stack and are sorted
		// by index, so that no pointer is written to the heap: while the GC
		// runs, every such write costs a barrier.
		var keys [smallMap]string
		var vals [smallMap]any
		var order [smallMap]uint8
		n := 0
		for k, v := range x {
			keys[n], vals[n], order[n] = k, v, uint8(n)
			n++
		}
		for i := 1; i < n; i++ {
			for j := i; j > 0 && keys[order[j]] < keys[order[j-1]]; j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
		dst = append(dst, '{')
		for i, m := range order[:n] {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, keys[m])
			dst = append(dst, ':')
			var ok bool
			if dst, ok = e.append(dst, vals[m], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// smallMap is the size up to which a map's members are sorted on the stack.
// Larger maps use the encoder's members stack.
const smallMap = 16

func (e *plainEncoder) appendLargeMap(dst []byte, x map[string]any, depth int) ([]byte, bool) {
	base := len(e.members)
	for k, v := range x {
		e.members = append(e.members, member{k, v})
	}
	members := e.members[base:]
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	ok := true
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, m.key)
		dst = append(dst, ':')
		if dst, ok = e.append(dst, m.val, depth+1); !ok {
			break
		}
	}
	clear(e.members[base:])
	e.members = e.members[:base]
	if !ok {
		return dst, false
	}
	return append(dst, '}'), true
}

// appendJSONFloat formats f as encoding/json does (ES6 number formatting).
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// htmlSafe marks the ASCII bytes encoding/json writes unescaped when it
// escapes HTML.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString quotes s as encoding/json does with HTML escaping:
// <, > and & as \u003c..., control characters, U+2028 and U+2029 escaped,
// invalid UTF-8 as \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
