package mcp

import "bytes"

// sseTap follows a text/event-stream as the SDK reads it and hands each
// message event's data to onEvent. It parses the way the SDK's scanner
// does: lines end at '\n' (a trailing '\r' is dropped), "field: value" with
// the value trimmed, consecutive data lines joined by '\n', and an event
// named other than "message" ignored. What it buffers is bounded by the
// connection's response budget.
type sseTap struct {
	onEvent func(data []byte)

	line    []byte
	name    []byte
	data    []byte
	hasData bool
}

func (s *sseTap) write(p []byte) {
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

// end handles the end of the stream, which also ends the last event.
func (s *sseTap) end() {
	if len(s.line) > 0 {
		s.field(s.line)
		s.line = s.line[:0]
	}
	s.dispatch()
}

func (s *sseTap) field(line []byte) {
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

func (s *sseTap) dispatch() {
	if len(s.data) > 0 && (len(s.name) == 0 || string(s.name) == "message") {
		s.onEvent(s.data)
	}
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
}
