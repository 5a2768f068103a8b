package mcp

import (
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"sync"
)

// The budget side of the transport: everything a connection receives is
// charged before the SDK reads it (header blocks, whole bodies, SSE streams
// as they are read through meteredBody and the SSE tap), and so is the
// decoded cost of each message. All of it is guarded by transport.mu.

func (t *transport) stats() (requests int, charged int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requests, t.charged
}

// remaining is what is left of the connection's budget, negative once it
// is exceeded.
func (t *transport) remaining() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return MaxResponseBytes - t.charged
}

// charge adds n bytes to the connection's budget and reports the budget
// error once it is exceeded.
func (t *transport) charge(op *operation, n int64) error {
	return t.spend(op, &t.charged, n, MaxResponseBytes, "the connection received more than %d bytes")
}

// chargeDecoded adds the decodedCost of a message about to be handed to
// the SDK to the connection's decoded budget and reports the budget error
// once it is exceeded; the message must then not reach the SDK.
func (t *transport) chargeDecoded(op *operation, msg []byte, extra int64) error {
	return t.spend(op, &t.decoded, decodedCost(msg)+extra, MaxDecodedCost, "the connection's messages would decode to more than %d bytes")
}

// spend adds n to the counter *total, guarded by t.mu; past limit the
// connection's budget is spent (what says why, with the limit) and the
// operation ends.
func (t *transport) spend(op *operation, total *int64, n, limit int64, what string) error {
	t.mu.Lock()
	*total += n
	if *total > limit && t.spent == nil {
		t.spent = fmt.Errorf("%w: %w: "+what, ErrProtocol, ErrBudgetExceeded, limit)
	}
	spent := t.spent
	t.mu.Unlock()
	if spent != nil {
		t.fatal(op, spent)
	}
	return spent
}

func (x *exchange) got1xx(code int, h textproto.MIMEHeader) error {
	return x.t.charge(x.op, headerBytes(code, http.Header(h)))
}

// readAll reads a whole body within the remaining budget, charging it.
func (t *transport) readAll(op *operation, resp *http.Response) ([]byte, error) {
	remaining := t.remaining()
	if resp.ContentLength > remaining {
		return nil, t.charge(op, resp.ContentLength)
	}
	body, err := readUpTo(resp.Body, resp.ContentLength, remaining+1)
	if cerr := t.charge(op, int64(len(body))); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		t.note(op, err)
		return nil, err
	}
	return body, nil
}

// readUpTo reads r to its end or to limit bytes, whichever comes first.
// size, when positive, is the length r announced: a body of that size
// takes one allocation.
func readUpTo(r io.Reader, size, limit int64) ([]byte, error) {
	if limit <= 0 {
		return nil, nil
	}
	n := int64(512)
	if size > 0 {
		n = size + 1 // room to see io.EOF without growing
	}
	b := make([]byte, 0, min(n, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), limit-int64(len(b)))))
		}
		end := min(int64(cap(b)), limit)
		k, err := r.Read(b[len(b):end])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// meteredBody charges a streamed body as the SDK reads it and feeds it to
// the SSE tap.
type meteredBody struct {
	x    *exchange
	rc   io.ReadCloser
	key  string // the call's id key, "" for a notification
	tap  sseTap
	err  error
	once sync.Once
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		if cerr := b.x.t.charge(b.x.op, int64(n)); cerr != nil {
			b.err = cerr
			b.rc.Close()
			return 0, cerr
		}
		b.tap.write(p[:n])
	}
	if err == io.EOF {
		b.tap.end()
		putTapBuffer(b.tap.data)
		b.tap.data = nil
	}
	if b.err != nil { // an event over the decoded budget: the SDK must not see its end
		b.rc.Close()
		return 0, b.err
	}
	switch {
	case err == io.EOF:
	case err != nil:
		b.x.t.note(b.x.op, err)
	}
	return n, err
}

func (b *meteredBody) observe(data []byte) {
	if b.err != nil {
		return
	}
	if err := b.x.t.chargeDecoded(b.x.op, data, 0); err != nil {
		b.err = err
		return
	}
	if b.x.op != nil || b.x.span != nil {
		m, ok := readMessage(data)
		b.x.t.observe(b.x.op, m, ok, b.key != "", true)
		b.x.span.answered(m, ok)
	}
	if b.key != "" {
		b.x.t.answeredStream(b.x, b.key)
	}
}

func (b *meteredBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.x.stop)
	return err
}

// tapBuffers keeps a few SSE tap buffers, up to maxPooledTap each, for
// later streams. A stream returns its buffer at io.EOF, in the goroutine
// that writes to it. (A sync.Pool would lose them at every GC, which comes
// every work item or two.)
var tapBuffers = make(chan []byte, 4)

const maxPooledTap = 64 << 10

func getTapBuffer() []byte {
	select {
	case b := <-tapBuffers:
		return b[:0]
	default:
		return nil
	}
}

func putTapBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledTap {
		return
	}
	select {
	case tapBuffers <- b:
	default:
	}
}

// headerBytes is what a response head costs at least: its status line,
// every parsed field as "Name: value\r\n", and the blank line.
func headerBytes(status int, h http.Header) int64 {
	n := int64(len("HTTP/1.1 000 \r\n")+len(http.StatusText(status))) + 2
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(": ") + len(v) + len("\r\n"))
		}
	}
	return n
}
