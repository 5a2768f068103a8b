package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// The classification side of the transport: which operation a request
// belongs to, what the server answered it, and how a failure the SDK would
// flatten into text ends the operation (fatal, note, outcome). All of it is
// guarded by transport.mu.

// operation is what the transport learns during one Connect, ListTools or
// CallTool.
type operation struct {
	cancel  context.CancelCauseFunc
	fatal   error
	lastErr error // the last transport failure, kept visible to errors.Is

	calls      map[string]string // JSON-RPC id → method, of the calls sent
	answered   map[string]bool   // request key → the server answered it
	last       string            // key of the last request sent, "" before any
	page       keptPage          // result of the last tools/list answered
	pageID     string
	refused    refusal // the last non-2xx answer that carried a JSON-RPC error
	authz      bool    // the OAuth handler's Authorize was called
	authzErr   error   // and failed
	resultType string  // resultType of the last tools/call answered, "" without
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

// refused records a 401 or 403: fatal, unless an OAuth handler has yet to
// authorize in this operation (the SDK calls it, then sends again).
func (t *transport) refused(op *operation, err *UnauthorizedError) {
	if op == nil {
		return
	}
	t.mu.Lock()
	retry := t.oauth && !op.authz
	t.mu.Unlock()
	if retry {
		t.note(op, err)
		return
	}
	t.fatal(op, err)
}

// authorizing marks the current operation's one Authorize; false when it
// had it already, or when no operation is running.
func (t *transport) authorizing() (*operation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	op := t.op
	if op == nil || op.authz {
		return op, false
	}
	op.authz = true
	return op, true
}

// authorizeFailed records the error of op's Authorize.
func (t *transport) authorizeFailed(op *operation, err error) {
	t.mu.Lock()
	op.authzErr = err
	t.mu.Unlock()
}

// authorizeError is the error of op's Authorize, or nil.
func (t *transport) authorizeError(op *operation) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.authzErr
}

// authorized forgets a refusal the SDK's Authorize and retry overcame.
func (t *transport) authorized(op *operation) {
	if op == nil || !t.oauth {
		return
	}
	t.mu.Lock()
	if _, ok := op.lastErr.(*UnauthorizedError); ok {
		op.lastErr = nil
	}
	t.mu.Unlock()
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

// keptPage is a raw tools/list result and whether the SDK was handed it
// with entries taken (slimToolsList).
type keptPage struct {
	result json.RawMessage
	took   bool
}

// takePage returns the raw result of the last tools/list op saw answered,
// and forgets it.
func (t *transport) takePage(op *operation) (keptPage, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := op.page, op.pageID != ""
	op.page, op.pageID = keptPage{}, ""
	return p, ok
}

// slim returns msg, the message observe found page in, as the SDK is
// handed it, and what the validator's decoding of the taken entries costs
// (slimToolsList); it records in op whether any entry was taken.
func (t *transport) slim(op *operation, msg, page []byte) ([]byte, int64) {
	out, taken := slimToolsList(msg, page)
	t.mu.Lock()
	op.page.took = taken > 0
	t.mu.Unlock()
	return out, taken
}

// refusal is the last non-2xx answer op saw carrying a JSON-RPC error
// (zero if none).
func (t *transport) refusal(op *operation) refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.refused
}

// answeredStream notes that the SSE stream of x carried the answer to its
// call.
func (t *transport) answeredStream(x *exchange, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if x.op != nil && x.op.answered[key] {
		x.draining = true
	}
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

// observe reads one JSON-RPC message the server sent. fromCall says it
// came in reply to a call, so a message that does not decode is an answer
// that could not be read. When the message answers one of op's tools/list
// calls, op keeps its result, a copy when reused says payload's buffer is
// reused, and observe returns the result within payload.
func (t *transport) observe(op *operation, m rpcMessage, ok, fromCall, reused bool) (page []byte) {
	if op == nil {
		return nil
	}
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
		if method == "tools/call" && m.result != nil {
			op.resultType = resultTypeOf(m.result)
		}
		if method == "tools/list" && m.result != nil {
			page = m.result
			kept := page
			if reused {
				kept = bytes.Clone(page)
			}
			op.page, op.pageID = keptPage{result: kept}, key
		}
	case key == "" && m.error != nil:
		op.answered[op.last] = true
	}
	return page
}

// resultTypeOf is a result's resultType, or "" when it has none.
func resultTypeOf(result []byte) string {
	var r struct {
		ResultType string `json:"resultType"`
	}
	if !decode(result, &r) {
		return ""
	}
	return r.ResultType
}

// callResultType is the resultType of op's last tools/call answer.
func (t *transport) callResultType(op *operation) string {
	if op == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.resultType
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

// misaddressed is the error a result under another id becomes.
const misaddressed = `{"code":-32603,"message":"the server answered under another request's id"}`

// readAnswer reads body, a JSON answer to call, once, and returns it with
// its message (ok false when it is not one), readdressed: a response that
// carries another id, or none, becomes that call's answer, which it is, as
// a JSON body answers the POST it came on. An error is re-addressed to the
// call; a result becomes an error. The SDK matches by id and would
// otherwise wait out the operation's budget, or fail to decode a null id,
// where a refused server/discover should fall back to initialize at once
// (TestConnectFallsBackWhenDiscoverAnswersAnotherID).
func readAnswer(body []byte, call request) (out []byte, m rpcMessage, ok bool) {
	m, ok = readMessage(body)
	if call.key == "" {
		return body, m, ok
	}
	out, m = readdressed(body, m, ok, call)
	return out, m, ok
}

// readdressed is readAnswer's readdressing of body, read as m (ok); it
// returns the message of what it returns.
func readdressed(body []byte, m rpcMessage, ok bool, call request) ([]byte, rpcMessage) {
	if !ok || m.result == nil && m.error == nil || idKey(m.id) == call.key {
		return body, m
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
	return append(out, '}'), rpcMessage{id: []byte(call.id), error: e}
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
