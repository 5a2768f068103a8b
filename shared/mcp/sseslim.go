package mcp

import (
	"bytes"
	"io"
	"slices"
)

// slimBody is the body of a tools/list answered on an SSE stream. It is
// charged and tapped as meteredBody is, but hands the SDK each event only
// once the event has ended: the answer to the listing with the entries'
// replacements made (slimToolsList), as a JSON answer is, and every other
// event byte for byte. Its buffers hold one event and grow as the tap's
// do, so they stay within the budget the stream is charged against.
type slimBody struct {
	meteredBody
	buf       []byte // what one read of the stream takes
	event     []byte // the bytes of the event being read
	lineStart int    // where the current line starts in event
	slim      []byte // the rewritten data of the event that just ended, if any
	out       []byte // what the SDK has yet to read
	off       int    // how much of out it has read
	done      error  // the stream's end (io.EOF) or failure, once out is read
}

// slimStreams selects slimBody for every tools/list answered on an SSE
// stream; a test turns it off to compare with the SDK's own decoding.
var slimStreams = true

// slimReadSize is what one read of the stream asks for.
const slimReadSize = 32 << 10

func newSlimBody(x *exchange, rc io.ReadCloser, key string, limit int) *slimBody {
	b := &slimBody{meteredBody: meteredBody{x: x, rc: rc, key: key}}
	b.tap = sseTap{limit: limit, onEvent: b.observe, data: getTapBuffer()}
	return b
}

func (b *slimBody) Read(p []byte) (int, error) {
	for b.off == len(b.out) {
		b.out, b.off = release(b.out), 0
		if b.err != nil {
			return 0, b.err
		}
		if b.done != nil {
			return 0, b.done
		}
		b.fill()
	}
	n := copy(p, b.out[b.off:])
	b.off += n
	return n, nil
}

// fill reads the stream once, charging and tapping what came, and moves
// every event that ended to out.
func (b *slimBody) fill() {
	if b.buf == nil {
		b.buf = make([]byte, slimReadSize)
	}
	n, err := b.rc.Read(b.buf)
	if n > 0 {
		if cerr := b.x.t.charge(b.x.op, int64(n)); cerr != nil {
			b.fail(cerr)
			return
		}
		b.take(b.buf[:n])
	}
	switch {
	case err == io.EOF:
		b.tap.end()
		putTapBuffer(b.tap.data)
		b.tap.data = nil
		b.flush()
		b.done = io.EOF
	case err != nil:
		b.x.t.note(b.x.op, err)
		b.slim = nil
		b.flush()
		b.done = err
	}
	if b.err != nil { // an event over the decoded budget: the SDK sees none of it
		b.fail(b.err)
	}
}

func (b *slimBody) fail(err error) {
	b.err = err
	b.out, b.off, b.event = nil, 0, nil
	b.rc.Close()
}

// take tapes p line by line and moves each event that ends in it to out.
// A line of nothing but '\r' ends an event, as the tap and the SDK's
// scanner have it.
func (b *slimBody) take(p []byte) {
	for len(p) > 0 && b.err == nil {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.event = b.tap.grow(b.event, p)
			b.tap.write(p)
			return
		}
		b.event = b.tap.grow(b.event, p[:i+1])
		b.tap.write(p[:i+1])
		p = p[i+1:]
		line := b.event[b.lineStart:]
		b.lineStart = len(b.event)
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			b.flush()
		}
	}
}

// flush moves the event read so far to out: rewritten when the tap found
// it to be the listing's answer and slimmed it, as it came otherwise.
func (b *slimBody) flush() {
	switch {
	case b.slim != nil:
		b.out = appendRewritten(slices.Grow(b.out, len(b.event)+len(b.slim)/8), b.event, b.slim)
	case len(b.out) == 0 && len(b.event) > maxPooledTap: // hand the event over rather than copy it
		b.out, b.event = b.event, nil
	default:
		b.out = append(b.out, b.event...)
	}
	b.event, b.lineStart, b.slim = release(b.event), 0, nil
}

// release empties buf for reuse, or drops it when it grew past
// maxPooledTap: a large event need not stay live after it was read.
func release(buf []byte) []byte {
	if cap(buf) > maxPooledTap {
		return nil
	}
	return buf[:0]
}

// appendRewritten appends event to out with its data lines replaced by
// data, one "data: " line per line of data, where the first one was.
func appendRewritten(out, event, data []byte) []byte {
	wrote := false
	for len(event) > 0 {
		line := event
		if i := bytes.IndexByte(event, '\n'); i >= 0 {
			line = event[:i+1]
		}
		event = event[len(line):]
		if !bytes.HasPrefix(line, []byte("data:")) {
			out = append(out, line...)
			continue
		}
		if wrote {
			continue
		}
		wrote = true
		for seg := range bytes.SplitSeq(data, []byte{'\n'}) {
			out = append(out, "data: "...)
			out = append(out, seg...)
			out = append(out, '\n')
		}
	}
	return out
}

// observe is the tap's handler: meteredBody's, but the answer to the
// listing (the page transport.observe finds) is slimmed and charged as the
// SDK will be handed it.
func (b *slimBody) observe(data []byte) {
	if b.err != nil {
		return
	}
	msg, taken := data, int64(0)
	m, ok := readMessage(data)
	if page := b.x.t.observe(b.x.op, m, ok, b.key != "", true); page != nil {
		msg, taken = b.x.t.slim(b.x.op, data, page)
	}
	if err := b.x.t.chargeDecoded(b.x.op, msg, taken); err != nil {
		b.err = err
		return
	}
	if len(msg) > 0 && &msg[0] != &data[0] {
		b.slim = msg
	}
	b.x.span.answered(m, ok)
	if b.key != "" {
		b.x.t.answeredStream(b.x, b.key)
	}
}
