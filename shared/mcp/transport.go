package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
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
	next    http.RoundTripper
	origin  string // scheme://host of the endpoint: the only origin that gets the token
	token   string
	timeout time.Duration // the client's Timeout, applied here (see exchange.start)

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

// operation is what the transport learns during one Connect, ListTools or
// CallTool.
type operation struct {
	cancel  context.CancelCauseFunc
	fatal   error
	lastErr error // the last transport failure, kept visible to errors.Is

	calls    map[string]string // JSON-RPC id → method, of the calls sent
	answered map[string]bool   // request key → the server answered it
	last     string            // key of the last request sent, "" before any
	page     json.RawMessage   // result of the last tools/list answered
	pageID   string
	refused  refusal // the last non-2xx answer that carried a JSON-RPC error
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

// begin makes op the operation that requests are attributed to.
func (t *transport) begin(cancel context.CancelCauseFunc) *operation {
	op := &operation{cancel: cancel, calls: map[string]string{}, answered: map[string]bool{}}
	t.mu.Lock()
	t.op = op
	t.mu.Unlock()
	return op
}

// end detaches op; later requests belong to no operation.
func (t *transport) end(op *operation) {
	t.mu.Lock()
	if t.op == op {
		t.op = nil
	}
	t.mu.Unlock()
}

// fatal records err as op's fatal error, once, and cancels op with it.
func (t *transport) fatal(op *operation, err error) {
	if op == nil {
		return
	}
	t.mu.Lock()
	first := op.fatal == nil
	if first {
		op.fatal = err
	}
	t.mu.Unlock()
	if first {
		op.cancel(err)
	}
}

func (t *transport) note(op *operation, err error) {
	if op == nil {
		return
	}
	t.mu.Lock()
	op.lastErr = err
	t.mu.Unlock()
}

// outcome returns what op learnt: its fatal error, its last transport
// failure, and whether the server answered op's last request.
func (t *transport) outcome(op *operation) (fatal, lastErr error, answered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.fatal, op.lastErr, op.last != "" && op.answered[op.last]
}

// takePage returns the raw result of the last tools/list op saw answered,
// and forgets it.
func (t *transport) takePage(op *operation) (json.RawMessage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := op.page, op.pageID != ""
	op.page, op.pageID = nil, ""
	return p, ok
}

// takePrimer returns the primed server/discover result, once.
func (t *transport) takePrimer() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.primer
	t.primer = nil
	return p
}

// refusal is the last non-2xx answer op saw carrying a JSON-RPC error
// (zero if none).
func (t *transport) refusal(op *operation) refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.refused
}

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
func (t *transport) chargeDecoded(op *operation, msg []byte) error {
	return t.spend(op, &t.decoded, decodedCost(msg), MaxDecodedCost, "the connection's messages would decode to more than %d bytes")
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
	msg, err := peek(req)
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
	if t.token != "" && sameOrigin(out.URL, t.origin) {
		out.Header = req.Header.Clone()
		out.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		err = t.failed(x.op, ctx, err, x.firstByte.Load())
		x.stop()
		return nil, err
	}

	if err := t.charge(x.op, headerBytes(resp.StatusCode, resp.Header)); err != nil {
		resp.Body.Close()
		x.stop()
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		t.fatal(x.op, unauthorized(resp))
	}

	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	media := mediaType(resp)
	if ok2xx && media == "text/event-stream" {
		b := &meteredBody{x: x, rc: resp.Body, key: msg.key}
		b.tap = sseTap{limit: int(max(t.remaining(), 0)), onEvent: b.observe, data: getTapBuffer()}
		resp.Body = b
		return resp, nil
	}

	body, err := t.readAll(x.op, resp)
	resp.Body.Close()
	x.stop()
	if err != nil {
		return nil, err
	}
	switch {
	case !ok2xx:
		t.observeRefusal(x.op, resp.StatusCode, body)
	case msg.key == "":
	case media == "application/json":
		body = readdress(body, msg)
		if page := t.observe(x.op, body, true, false); page != nil {
			body = slimToolsList(body, page)
		}
	default:
		t.markAnswered(x.op, msg.key)
	}
	if err := t.chargeDecoded(x.op, body); err != nil {
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
	chainEnd   time.Time // the client's Timeout from the first request of a redirect chain
	cancel     context.CancelCauseFunc
	noDeadline context.CancelFunc // releases the deadline's timer
	unlinkReq  func() bool
	unlinkLife func() bool
	trace      httptrace.ClientTrace
	firstByte  atomic.Bool
	draining   bool        // the SSE stream carried the answer; guarded by t.mu
	grace      *time.Timer // guarded by t.mu
}

type exchangeKey struct{}

// start derives the request's context: the client's Timeout over the
// redirect chain, the fallback deadline when there is neither that nor one
// on the request, the caps on notifications/cancelled and DELETE. It ends
// when the SDK's request context or the Conn ends (see ended). net/http
// would run a timer goroutine per request to apply the Timeout to a
// RoundTripper it does not know; this needs none.
func (x *exchange) start(req *http.Request, msg request) context.Context {
	base := req.Context()
	now := time.Now()
	if x.t.timeout > 0 {
		x.chainEnd = now.Add(x.t.timeout)
		if req.Response != nil && req.Response.Request != nil {
			if prev, ok := req.Response.Request.Context().Value(exchangeKey{}).(*exchange); ok {
				x.chainEnd = prev.chainEnd
			}
		}
	}
	sdkEnd, hasDeadline := base.Deadline()
	var d time.Duration
	if !hasDeadline && x.chainEnd.IsZero() {
		d = DialTimeout
	}
	switch {
	case msg.method == methodCancelled:
		d = cancelNotifyTimeout
	case req.Method == http.MethodDelete:
		d = deleteTimeout
	}
	end := x.chainEnd
	if d > 0 {
		end = earlier(end, now.Add(d))
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(base))
	x.cancel = cancel
	if !end.IsZero() {
		ctx, x.noDeadline = context.WithDeadline(ctx, end)
	}
	if hasDeadline && (end.IsZero() || sdkEnd.Before(end)) {
		ctx = sdkDeadline{ctx, sdkEnd}
	}
	if x.t.timeout > 0 {
		ctx = context.WithValue(ctx, exchangeKey{}, x)
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
}

// earlier returns the earlier of two instants, the zero one meaning never.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// settleTimeout is how long an answered SSE stream may still be read
// after its operation or Conn ended; a variable for tests.
var settleTimeout = 20 * time.Millisecond

// answeredStream notes that the SSE stream of x carried the answer to its
// call.
func (t *transport) answeredStream(x *exchange, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if x.op != nil && x.op.answered[key] {
		x.draining = true
	}
}

func (x *exchange) gotFirstByte() { x.firstByte.Store(true) }

func (x *exchange) got1xx(code int, h textproto.MIMEHeader) error {
	return x.t.charge(x.op, headerBytes(code, http.Header(h)))
}

// failed classifies a failed round trip. A refused dial or a response head
// that could not be parsed ends the operation; anything else is a network
// failure the SDK decides about.
func (t *transport) failed(op *operation, ctx context.Context, err error, answering bool) error {
	switch {
	case errors.Is(err, guard.ErrDenied):
		t.fatal(op, err)
	case answering && ctx.Err() == nil:
		err = fmt.Errorf("%w: malformed or oversized response header: %w", ErrProtocol, err)
		t.fatal(op, err)
	default:
		t.note(op, err)
	}
	return err
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

// observe reads one JSON-RPC message the server sent. fromCall says it
// came in reply to a call, so a message that does not decode is an answer
// that could not be read. When the message answers one of op's tools/list
// calls, op keeps its result, a copy when reused says payload's buffer is
// reused, and observe returns it.
func (t *transport) observe(op *operation, payload []byte, fromCall, reused bool) (page []byte) {
	if op == nil {
		return nil
	}
	m, ok := readMessage(payload)
	if !ok {
		if fromCall {
			t.mu.Lock()
			op.answered[op.last] = true
			t.mu.Unlock()
		}
		return nil
	}
	if m.result == nil && m.error == nil {
		return nil // a request or notification from the server
	}
	key := idKey(m.id)
	t.mu.Lock()
	defer t.mu.Unlock()
	method, ours := op.calls[key]
	switch {
	case ours:
		op.answered[key] = true
		if method == "tools/list" && m.result != nil {
			page = m.result
			if reused {
				page = bytes.Clone(page)
			}
			op.page, op.pageID = page, key
		}
	case key == "" && m.error != nil:
		op.answered[op.last] = true
	}
	return page
}

// observeRefusal notes a non-2xx body that carries a JSON-RPC error, and
// its status: the SDK surfaces it as the call's error.
func (t *transport) observeRefusal(op *operation, status int, body []byte) {
	if op == nil {
		return
	}
	m, ok := readMessage(body)
	if !ok || m.error == nil {
		return
	}
	key := idKey(m.id)
	t.mu.Lock()
	defer t.mu.Unlock()
	op.refused = refusalOf(status, m.error)
	if _, ours := op.calls[key]; ours {
		op.answered[key] = true
	} else if key == "" {
		op.answered[op.last] = true
	}
}

func (t *transport) markAnswered(op *operation, key string) {
	if op == nil {
		return
	}
	t.mu.Lock()
	op.answered[key] = true
	t.mu.Unlock()
}

// checkRedirect wraps a client's redirect policy so that a refusal ends
// the current operation with the policy's error.
func (t *transport) checkRedirect(policy func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	if policy == nil {
		return nil
	}
	return func(req *http.Request, via []*http.Request) error {
		err := policy(req, via)
		if err != nil && !errors.Is(err, http.ErrUseLastResponse) {
			t.mu.Lock()
			op := t.op
			t.mu.Unlock()
			t.fatal(op, err)
		}
		return err
	}
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
	if err := b.x.t.chargeDecoded(b.x.op, data); err != nil {
		b.err = err
		return
	}
	b.x.t.observe(b.x.op, data, b.key != "", true)
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

// peek reads the JSON-RPC id and method of a POST body, leaving the body
// readable.
func peek(req *http.Request) (request, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		return request{}, nil
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
		return request{}, err
	}
	id, method, ok := readCall(body)
	if !ok || method == "" {
		return request{post: true}, nil // unreadable, or a response to the server
	}
	return request{post: true, key: idKey(id), id: id, method: method}, nil
}

// misaddressed is the error a result under another id becomes.
const misaddressed = `{"code":-32603,"message":"the server answered under another request's id"}`

// readdress makes a JSON response to a call that carries another id, or
// none, that call's answer, which it is: a JSON body answers the POST it
// came on. An error is re-addressed to the call; a result becomes an
// error. The SDK matches by id and would otherwise wait out the operation's
// budget, or fail to decode a null id, where a refused server/discover
// should fall back to initialize at once
// (TestConnectFallsBackWhenDiscoverAnswersAnotherID).
func readdress(body []byte, call request) []byte {
	if call.key == "" {
		return body
	}
	m, ok := readMessage(body)
	if !ok || m.result == nil && m.error == nil || idKey(m.id) == call.key {
		return body
	}
	e := m.error
	if e == nil {
		e = []byte(misaddressed)
	}
	out := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"error":}`)+len(call.id)+len(e))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, call.id...)
	out = append(out, `,"error":`...)
	out = append(out, e...)
	return append(out, '}')
}

// idKey normalises a JSON-RPC id the way the SDK matches it: integral
// numbers by value, strings by content. Null or absent is "".
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s:" + s
	}
	if n := len(raw); n <= 15 && (raw[0] >= '1' && raw[0] <= '9' || raw[0] == '-' && n > 1 && raw[1] >= '1' && raw[1] <= '9' || n == 1 && raw[0] == '0') && allDigits(raw[1:]) {
		return "n:" + string(raw) // an integer that formats back as written
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return "x:" + string(raw)
	}
	return "n:" + strconv.FormatInt(int64(f), 10)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
