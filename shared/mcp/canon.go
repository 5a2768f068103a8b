package mcp

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// canon writes a raw JSON value as json.Marshal writes what the value
// decodes to in an any: members sorted by key, no whitespace, strings and
// numbers as encoding/json writes a string and a float64. It reads the
// bytes once and builds no maps. What it does not read exactly as the
// decoders do (invalid UTF-8, a key given twice, a number no float64
// holds, nesting past maxPlainDepth) it leaves to them: ok is false.
// A canon is reused by one validator; it is not safe for concurrent use.
type canon struct {
	dec     jsontext.Decoder
	rd      bytes.Reader
	members []canonMember // the members of the objects being written
	keys    []byte        // their keys, unquoted
	tmp     []byte        // an object's members while they are reordered
	object  bool          // the top-level value is an object with "type": "object"
}

// canonMember is one member of an object being written: its key,
// keys[keyStart:keyEnd], and its bytes in the output, out[start:end].
type canonMember struct {
	keyStart, keyEnd int
	start, end       int
}

// appendCanonical appends the canonical form of raw, a JSON value, to out.
// object reports whether raw is an object whose "type" is the string
// "object" (objectSchema's verdict on its decoding).
func (c *canon) appendCanonical(out, raw []byte) (res []byte, object, ok bool) {
	c.rd.Reset(raw)
	c.dec.Reset(&c.rd)
	c.members, c.keys, c.object = c.members[:0], c.keys[:0], false
	res, ok = c.value(out, 0)
	if !ok {
		return out, false, false
	}
	if _, err := c.dec.ReadToken(); err != io.EOF { // more than one value
		return out, false, false
	}
	return res, c.object, true
}

func (c *canon) value(out []byte, depth int) ([]byte, bool) {
	if depth > maxPlainDepth {
		return out, false
	}
	switch c.dec.PeekKind() {
	case '{':
		return c.objectValue(out, depth)
	case '[':
		return c.array(out, depth)
	}
	v, err := c.dec.ReadValue()
	if err != nil {
		return out, false
	}
	switch v.Kind() {
	case 'n', 't', 'f':
		return append(out, v...), true
	case '"':
		return c.str(out, v)
	case '0':
		return appendNumber(out, v)
	}
	return out, false
}

func (c *canon) array(out []byte, depth int) ([]byte, bool) {
	if _, err := c.dec.ReadToken(); err != nil {
		return out, false
	}
	out = append(out, '[')
	for n := 0; c.dec.PeekKind() != ']'; n++ {
		if n > 0 {
			out = append(out, ',')
		}
		var ok bool
		if out, ok = c.value(out, depth+1); !ok {
			return out, false
		}
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return out, false
	}
	return append(out, ']'), true
}

// objectValue writes an object's members as they come, then reorders them
// by key when they did not come sorted.
func (c *canon) objectValue(out []byte, depth int) ([]byte, bool) {
	if _, err := c.dec.ReadToken(); err != nil {
		return out, false
	}
	out = append(out, '{')
	first, base, keyBase := len(out), len(c.members), len(c.keys)
	defer func() { c.members, c.keys = c.members[:base], c.keys[:keyBase] }()
	sorted := true
	for c.dec.PeekKind() != '}' {
		name, err := c.dec.ReadValue() // a duplicate name is an error
		if err != nil || name.Kind() != '"' {
			return out, false
		}
		m := canonMember{keyStart: len(c.keys)}
		if c.keys, err = jsontext.AppendUnquote(c.keys, name); err != nil {
			return out, false
		}
		m.keyEnd = len(c.keys)
		if len(c.members) > base {
			out = append(out, ',')
			prev := c.members[len(c.members)-1]
			sorted = sorted && bytes.Compare(c.keys[prev.keyStart:prev.keyEnd], c.keys[m.keyStart:m.keyEnd]) < 0
		}
		m.start = len(out)
		out = appendString(out, c.keys[m.keyStart:m.keyEnd])
		out = append(out, ':')
		valueAt := len(out)
		var ok bool
		if out, ok = c.value(out, depth+1); !ok {
			return out, false
		}
		if depth == 0 && string(c.keys[m.keyStart:m.keyEnd]) == "type" {
			c.object = string(out[valueAt:]) == `"object"`
		}
		m.end = len(out)
		c.members = append(c.members, m)
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return out, false
	}
	if !sorted {
		out = c.reorder(out, first, c.members[base:])
	}
	return append(out, '}'), true
}

// reorder rewrites out[first:], the members ms separated by commas, in the
// order of their keys.
func (c *canon) reorder(out []byte, first int, ms []canonMember) []byte {
	c.tmp = append(c.tmp[:0], out[first:]...)
	slices.SortFunc(ms, func(a, b canonMember) int {
		return bytes.Compare(c.keys[a.keyStart:a.keyEnd], c.keys[b.keyStart:b.keyEnd])
	})
	out = out[:first]
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.tmp[m.start-first:m.end-first]...)
	}
	return out
}

// str writes a string value: as it came when encoding/json would write
// the same bytes, re-escaped otherwise.
func (c *canon) str(out, v []byte) ([]byte, bool) {
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && verbatim(inner) {
		return append(out, v...), true
	}
	start := len(c.tmp)
	s, err := jsontext.AppendUnquote(c.tmp, v)
	if err != nil {
		return out, false
	}
	c.tmp = s[:start]
	return appendString(out, s[start:]), true
}

// verbatim reports whether encoding/json writes s, valid UTF-8, as it is.
func verbatim(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20, b == '"', b == '\\', b == '<', b == '>', b == '&':
			return false
		case b == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9):
			return false // U+2028, U+2029
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// appendString appends s, valid UTF-8, quoted as encoding/json quotes a
// string with HTML escaping (its appendString).
func appendString(out, s []byte) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch b {
			case '\\', '"':
				out = append(out, '\\', b)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// appendNumber appends the JSON number v as encoding/json writes the
// float64 it decodes to; false when no float64 holds it.
func appendNumber(out, v []byte) ([]byte, bool) {
	if shortInteger(v) {
		return append(out, v...), true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return out, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(out)
	out = strconv.AppendFloat(out, f, format, -1, 64)
	if n := len(out); format == 'e' && n-start >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
		out[n-2] = out[n-1] // e-09 is written e-9
		out = out[:n-1]
	}
	return out, true
}

// shortInteger reports whether v is an integer of at most 15 digits, which
// a float64 holds exactly and encoding/json writes as it is.
func shortInteger(v []byte) bool {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return false
		}
	}
	return true
}
