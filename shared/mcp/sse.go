package mcp

import "bytes"

// sseTap follows a text/event-stream as the SDK reads it and hands each
// message event's data to onEvent. It parses the way the SDK's scanner
// does: lines end at '\n', a line of nothing but '\r' ends an event,
// "field: value" with the value trimmed, consecutive data lines joined by
// '\n', and an event named other than "message" ignored. It copies a data
// or event value straight into place and no other line, and its buffers
// never grow past limit, the budget left when the stream began: more than
// that cannot arrive.
type sseTap struct {
	onEvent func(data []byte)
	limit   int

	state    tapState
	lineLen  int     // bytes of the current line so far
	text     bool    // the current line so far holds more than '\r'
	key      [5]byte // the start of the current line's field name
	keyLen   int
	valStart int // where the current line's value starts in name or data

	name    []byte
	data    []byte
	hasData bool
}

type tapState uint8

const (
	inKey   tapState = iota // before the line's first ':'
	inData                  // in the value of a data field
	inEvent                 // in the value of an event field
	inOther                 // in the value of a field that does not matter
)

func (s *sseTap) write(p []byte) {
	for len(p) > 0 {
		if s.state == inKey {
			n := s.readKey(p)
			p = p[n:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		s.lineLen += len(chunk)
		switch s.state {
		case inData:
			s.data = s.grow(s.data, chunk)
		case inEvent:
			s.name = s.grow(s.name, chunk)
		}
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
	}
}

// readKey consumes the field name at the start of p, up to and including
// the ':' or '\n' that ends it, and returns how many bytes it consumed.
func (s *sseTap) readKey(p []byte) int {
	for i, c := range p {
		switch c {
		case '\n':
			s.endLine()
			return i + 1
		case ':':
			s.lineLen++
			s.startValue()
			return i + 1
		}
		s.lineLen++
		if c != '\r' {
			s.text = true
		}
		if s.keyLen < len(s.key) {
			s.key[s.keyLen] = c
		}
		s.keyLen++
	}
	return len(p)
}

func (s *sseTap) startValue() {
	switch key := s.key[:min(s.keyLen, len(s.key))]; {
	case s.keyLen == 4 && string(key) == "data":
		if s.hasData {
			s.data = s.grow(s.data, []byte{'\n'})
		}
		s.state, s.valStart = inData, len(s.data)
	case s.keyLen == 5 && string(key) == "event":
		s.state, s.name, s.valStart = inEvent, s.name[:0], 0
	default:
		s.state = inOther
	}
}

// endLine handles the end of a line.
func (s *sseTap) endLine() {
	switch s.state {
	case inKey:
		if !s.text {
			s.dispatch()
		}
	case inData:
		s.data = trimFrom(s.data, s.valStart)
		s.hasData = true
	case inEvent:
		s.name = trimFrom(s.name, s.valStart)
	}
	s.state, s.lineLen, s.text, s.keyLen = inKey, 0, false, 0
}

// end handles the end of the stream, which also ends the last event.
func (s *sseTap) end() {
	if s.lineLen > 0 {
		s.endLine()
	}
	s.dispatch()
}

func (s *sseTap) dispatch() {
	if len(s.data) > 0 && (len(s.name) == 0 || string(s.name) == "message") {
		s.onEvent(s.data)
	}
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
}

// jumpToLimit is the size past which a growing buffer goes straight to the
// tap's limit: an event that large is rare, and a hostile one would
// otherwise leave a trail of halves behind.
const jumpToLimit = 1 << 20

// grow appends p to buf, doubling its capacity as needed (past
// jumpToLimit, straight to limit) but never past limit unless p itself
// needs more.
func (s *sseTap) grow(buf, p []byte) []byte {
	if need := len(buf) + len(p); need > cap(buf) {
		size := max(2*cap(buf), 512)
		if size > jumpToLimit {
			size = s.limit
		}
		size = max(min(size, s.limit), need)
		grown := make([]byte, len(buf), size)
		copy(grown, buf)
		buf = grown
	}
	return append(buf, p...)
}

// trimFrom trims white space from buf[start:] in place.
func trimFrom(buf []byte, start int) []byte {
	v := bytes.TrimSpace(buf[start:])
	n := copy(buf[start:], v)
	return buf[:start+n]
}
