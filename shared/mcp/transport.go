package mcp

import (
	"bytes"
	"context"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Caps on requests whose end nothing waits for. The SDK sends a
// notifications/cancelled on a detached context for up to 5 s, and the
// session-ending DELETE for up to 5 s; both are best effort.
const (
	cancelNotifyTimeout = 250 * time.Millisecond
	deleteTimeout       = 500 * time.Millisecond
)

const methodCancelled = "notifications/cancelled"

// transport is the RoundTripper every request of one Conn goes through. It
// counts requests, charges the response budget before the SDK reads a body,
// records what the SDK flattens into text (a refused dial, a refused
// redirect, a 401/403, an exhausted budget) as the current operation's fatal
// error and cancels that operation, and notes which calls the server
// answered, keeping the raw result of each tools/list.
type transport struct {
	next   http.RoundTripper
	origin string // scheme://host of the endpoint: the only origin that gets the token
	token  string
	oauth  bool // the SDK authorizes: a 401/403 is fatal on its second time in an operation

	life context.Context // ends every request of the Conn when cancelled
	kill context.CancelFunc

	mu       sync.Mutex
	requests int
	seq      int
	charged  int64
	decoded  int64 // decodedCost of the messages handed to the SDK
	spent    error // set once the budget is exceeded; no request is sent after
	op       *operation
	notices  map[*http.Request]context.CancelFunc // notifications/cancelled in flight
	primer   []byte                               // answers the next server/discover locally, once
}

func newTransport(next http.RoundTripper, endpoint *url.URL, token string) *transport {
	if next == nil {
		next = http.DefaultTransport
	}
	life, kill := context.WithCancel(context.Background())
	return &transport{
		next:   next,
		origin: endpoint.Scheme + "://" + strings.ToLower(endpoint.Host),
		token:  token,
		life:   life,
		kill:   kill,
	}
}

// track registers an in-flight notifications/cancelled so that Close can
// drop it.
func (t *transport) track(req *http.Request, cancel context.CancelFunc) {
	t.mu.Lock()
	if t.notices == nil {
		t.notices = map[*http.Request]context.CancelFunc{}
	}
	t.notices[req] = cancel
	t.mu.Unlock()
}

func (t *transport) untrack(req *http.Request) {
	t.mu.Lock()
	delete(t.notices, req)
	t.mu.Unlock()
}

// dropNotices cancels every notifications/cancelled in flight: once the
// connection closes, telling the server about a cancelled call is moot.
func (t *transport) dropNotices() {
	t.mu.Lock()
	notices := t.notices
	t.notices = nil
	t.mu.Unlock()
	for _, cancel := range notices {
		cancel()
	}
}

// takePrimer returns the primed server/discover result, once.
func (t *transport) takePrimer() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.primer
	t.primer = nil
	return p
}

// request is what the transport reads from an outgoing JSON-RPC message.
type request struct {
	post   bool
	key    string // id key for a call, "" for a notification or a non-POST
	id     []byte // the call's id as sent
	method string
}

// register counts req and attributes it to the current operation. Only a
// POSTed request is one of the operation's own: a GET resumes one, a DELETE
// ends the session, a POSTed response answers the server, and a
// notifications/cancelled may belong to an earlier operation.
func (t *transport) register(req request) *operation {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	op := t.op
	if op == nil || !req.post || req.method == "" || req.method == methodCancelled {
		return op
	}
	t.seq++
	op.last = "r" + strconv.Itoa(t.seq)
	if req.key != "" {
		op.calls[req.key] = req.method
		op.last = req.key
	}
	return op
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	spent := t.spent
	t.mu.Unlock()
	if spent != nil {
		closeBody(req)
		return nil, spent
	}
	msg, body, err := peek(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if msg.method == methodDiscover {
		if result := t.takePrimer(); result != nil {
			closeBody(req)
			return primedAnswer(req, msg.id, result), nil
		}
	}

	x := &exchange{t: t}
	ctx := x.start(req, msg)
	x.op = t.register(msg)
	x.trace = httptrace.ClientTrace{GotFirstResponseByte: x.gotFirstByte, Got1xxResponse: x.got1xx}
	ctx = httptrace.WithClientTrace(ctx, &x.trace)

	out := req.WithContext(ctx)
	x.span, body = startSpan(req, msg, body)
	x.span.inject(out, req, body)
	if t.token != "" && sameOrigin(out.URL, t.origin) {
		out.Header = out.Header.Clone()
		out.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		x.span.failed(err)
		err = t.failed(x.op, ctx, err, x.firstByte.Load())
		x.stop()
		return nil, err
	}
	x.span.responded(resp)

	if err := t.charge(x.op, headerBytes(resp.StatusCode, resp.Header)); err != nil {
		resp.Body.Close()
		x.stop()
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		t.refused(x.op, unauthorized(resp))
	}

	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok2xx {
		t.authorized(x.op)
	}
	media := mediaType(resp)
	if ok2xx && media == "text/event-stream" && msg.method == "tools/list" && slimStreams {
		resp.Body = newSlimBody(x, resp.Body, msg.key, int(max(t.remaining(), 0)))
		return resp, nil
	}
	if ok2xx && media == "text/event-stream" {
		b := &meteredBody{x: x, rc: resp.Body, key: msg.key}
		b.tap = sseTap{limit: int(max(t.remaining(), 0)), onEvent: b.observe, data: getTapBuffer()}
		resp.Body = b
		return resp, nil
	}

	body, err = t.readAll(x.op, resp)
	resp.Body.Close()
	var (
		answer = body // readdressed
		m      rpcMessage
		isMsg  bool
	)
	if err == nil && (!ok2xx && x.span != nil || ok2xx && media == "application/json" && (msg.key != "" || x.span != nil)) {
		answer, m, isMsg = readAnswer(body, msg)
	}
	if x.span != nil && err == nil && (!ok2xx || media == "application/json") {
		x.span.answered(m, isMsg)
	}
	x.stop()
	if err != nil {
		return nil, err
	}
	var taken int64 // cost of the listed entries the validator decodes
	switch {
	case !ok2xx:
		t.observeRefusal(x.op, resp.StatusCode, body)
	case msg.key == "":
	case media == "application/json":
		body = answer
		if page := t.observe(x.op, m, isMsg, true, false); page != nil {
			body, taken = t.slim(x.op, body, page)
		}
	default:
		t.markAnswered(x.op, msg.key)
	}
	if err := t.chargeDecoded(x.op, body, taken); err != nil {
		return nil, err
	}
	rb := &readBody{}
	rb.Reset(body)
	resp.Body, resp.ContentLength = rb, int64(len(body))
	return resp, nil
}

// readBody is a body read in full, handed to the SDK.
type readBody struct{ bytes.Reader }

func (*readBody) Close() error { return nil }

// exchange is one request in flight.
type exchange struct {
	t          *transport
	op         *operation
	req        *http.Request   // the SDK's, as the key of a tracked notice
	base       context.Context // the SDK's request context
	tracked    bool
	cancel     context.CancelCauseFunc
	noDeadline context.CancelFunc // releases the deadline's timer
	unlinkReq  func() bool
	unlinkLife func() bool
	trace      httptrace.ClientTrace
	firstByte  atomic.Bool
	span       *mcpSpan    // nil when the request is not traced
	draining   bool        // the SSE stream carried the answer; guarded by t.mu
	grace      *time.Timer // guarded by t.mu
}

// start derives the request's context: the fallback deadline when the
// request has none (the client's Timeout, which net/http applies, gives it
// one), and the caps on notifications/cancelled and DELETE. It ends when
// the SDK's request context or the Conn ends (see ended).
func (x *exchange) start(req *http.Request, msg request) context.Context {
	base := req.Context()
	now := time.Now()
	sdkEnd, hasDeadline := base.Deadline()
	var d time.Duration
	if !hasDeadline {
		d = DialTimeout
	}
	switch {
	case msg.method == methodCancelled:
		d = cancelNotifyTimeout
	case req.Method == http.MethodDelete:
		d = deleteTimeout
	}
	var end time.Time
	if d > 0 {
		end = now.Add(d)
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(base))
	x.cancel = cancel
	if !end.IsZero() {
		ctx, x.noDeadline = context.WithDeadline(ctx, end)
	}
	if hasDeadline && (end.IsZero() || sdkEnd.Before(end)) {
		ctx = sdkDeadline{ctx, sdkEnd}
	}
	if msg.method == methodCancelled {
		x.req, x.tracked = req, true
		x.t.track(req, x.drop)
	}
	x.base = base
	switch { // already over: end it before net/http could start a dial for nothing
	case base.Err() != nil:
		cancel(context.Cause(base))
	case x.t.life.Err() != nil:
		cancel(context.Canceled)
	}
	x.unlinkReq = context.AfterFunc(base, x.requestEnded)
	x.unlinkLife = context.AfterFunc(x.t.life, x.lifeEnded)
	return ctx
}

// sdkDeadline reports the deadline of the SDK's request context, which
// that context enforces: the request then ends through requestEnded, after
// the SDK's context, so that the SDK sees its own deadline pass rather than
// a transport error (it sends notifications/cancelled only for the former).
type sdkDeadline struct {
	context.Context
	at time.Time
}

func (c sdkDeadline) Deadline() (time.Time, bool) { return c.at, true }

// requestEnded and lifeEnded run when the SDK's request context or the
// Conn ends. They cancel the request, except one whose answer has arrived
// on an SSE stream the SDK is still reading to its end: that gets
// settleTimeout to finish, so that its connection is not closed under it
// and the next request need not dial again (the SDK returns an answer as
// soon as its event arrives and reads the rest of the stream in a
// goroutine, while the operation that asked ends).
func (x *exchange) requestEnded() { x.ended(context.Cause(x.base)) }

func (x *exchange) lifeEnded() { x.ended(context.Canceled) }

func (x *exchange) ended(cause error) {
	x.t.mu.Lock()
	if x.draining {
		if x.grace == nil {
			x.grace = time.AfterFunc(settleTimeout, func() { x.cancel(cause) })
		}
		x.t.mu.Unlock()
		return
	}
	x.t.mu.Unlock()
	x.cancel(cause)
}

// drop cancels a tracked notice.
func (x *exchange) drop() { x.cancel(context.Canceled) }

// stop ends the request's context once its answer is read or abandoned.
func (x *exchange) stop() {
	x.unlinkReq()
	x.unlinkLife()
	if x.tracked {
		x.t.untrack(x.req)
	}
	x.t.mu.Lock()
	if x.grace != nil {
		x.grace.Stop()
	}
	x.t.mu.Unlock()
	if x.noDeadline != nil {
		x.noDeadline()
	}
	x.cancel(context.Canceled)
	x.span.end()
}

// settleTimeout is how long an answered SSE stream may still be read
// after its operation or Conn ended; a variable for tests.
var settleTimeout = 20 * time.Millisecond

func (x *exchange) gotFirstByte() { x.firstByte.Store(true) }

// peek reads the JSON-RPC id and method of a POST body, leaving the body
// readable, and returns the body too (nil for any other request).
func peek(req *http.Request) (request, []byte, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		return request{}, nil, nil
	}
	var body []byte
	var err error
	if req.GetBody != nil {
		var rc io.ReadCloser
		if rc, err = req.GetBody(); err == nil {
			body, err = readUpTo(rc, req.ContentLength, math.MaxInt64)
			rc.Close()
		}
	} else {
		body, err = readUpTo(req.Body, req.ContentLength, math.MaxInt64)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if err != nil {
		return request{}, nil, err
	}
	id, method, ok := readCall(body)
	if !ok || method == "" {
		return request{post: true}, body, nil // unreadable, or a response to the server
	}
	return request{post: true, key: idKey(id), id: id, method: method}, body, nil
}

// mediaType is the response's media type as mime.ParseMediaType reads it,
// without parsing the two this transport looks for when they come bare.
func mediaType(resp *http.Response) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "application/json" || ct == "text/event-stream" {
		return ct
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}

func sameOrigin(u *url.URL, origin string) bool {
	return u.Scheme+"://"+strings.ToLower(u.Host) == origin
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
