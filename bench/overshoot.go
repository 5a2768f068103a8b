package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// Operations whose overshoot is measured.
const (
	OpConnect = "Connect"
	OpList    = "ListTools"
	OpCall    = "CallTool"
	OpClose   = "Close"
)

// Ops lists them in order.
var Ops = []string{OpConnect, OpList, OpCall, OpClose}

// OvershootDeadline is the deadline given to Connect, ListTools and CallTool.
const OvershootDeadline = 500 * time.Millisecond

// Overshoot measures op through client against a server that accepts and
// never answers, reps times. For Connect, ListTools and CallTool each
// sample is the time from the context deadline to the return; for Close it
// is Close's duration while the session-ending DELETE is never answered.
// The operation's error is expected and not returned.
func Overshoot(ctx context.Context, client item.Client, op string, reps int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, reps)
	for range reps {
		d, err := overshootOnce(ctx, client, op)
		if err != nil {
			return nil, fmt.Errorf("overshoot %s %s: %w", client, op, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func overshootOnce(ctx context.Context, client item.Client, op string) (time.Duration, error) {
	if op == OpConnect {
		l, err := silentListener()
		if err != nil {
			return 0, err
		}
		defer l.Close()
		url := "http://" + l.Addr().String() + "/mcp"
		spec, err := EchoSpec(url)
		if err != nil {
			return 0, err
		}
		defer spec.HTTPClient.CloseIdleConnections()
		dctx, cancel := context.WithTimeout(ctx, OvershootDeadline)
		defer cancel()
		deadline, _ := dctx.Deadline()
		sess, err := item.Connect(dctx, client, spec)
		over := time.Since(deadline)
		if err == nil {
			sess.Close()
			return 0, fmt.Errorf("connect to a silent server succeeded")
		}
		return over, nil
	}

	hang := map[string]string{OpList: "tools/list", OpCall: "tools/call", OpClose: http.MethodDelete}[op]
	h := newHangHandler(hang)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv, err := Serve(mux)
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	defer h.release() // before srv.Close, which waits for handlers
	spec, err := EchoSpec(srv.URL + "/mcp")
	if err != nil {
		return 0, err
	}
	defer spec.HTTPClient.CloseIdleConnections()
	sess, err := item.Connect(ctx, client, spec)
	if err != nil {
		return 0, err
	}
	if op == OpClose {
		start := time.Now()
		_ = sess.Close()
		return time.Since(start), nil
	}
	defer sess.Close()
	dctx, cancel := context.WithTimeout(ctx, OvershootDeadline)
	defer cancel()
	deadline, _ := dctx.Deadline()
	if op == OpList {
		_, err = sess.List(dctx)
	} else {
		_, err = sess.Call(dctx, "echo", json.RawMessage(`{"text":"hello"}`))
	}
	over := time.Since(deadline)
	if err == nil {
		return 0, fmt.Errorf("%s against a silent server succeeded", op)
	}
	return over, nil
}

// silentListener accepts TCP connections on loopback and never reads or
// writes; closing it closes them.
type silent struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func silentListener() (*silent, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &silent{Listener: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	return s, nil
}

func (s *silent) Close() error {
	err := s.Listener.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	return err
}

// hangHandler serves the legacy fixture (which gives sessions, so Close
// sends a DELETE) but never answers requests for one JSON-RPC method, or
// one HTTP method, until released or the client goes away.
type hangHandler struct {
	next    http.Handler
	method  string
	stop    chan struct{}
	release func()
}

func newHangHandler(method string) *hangHandler {
	next, _ := mcptest.NewHandler(FixtureOptions(Legacy))
	stop := make(chan struct{})
	return &hangHandler{next: next, method: method, stop: stop, release: sync.OnceFunc(func() { close(stop) })}
}

func (h *hangHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method, err := mcptest.Method(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if method != h.method {
		h.next.ServeHTTP(w, r)
		return
	}
	select {
	case <-r.Context().Done():
	case <-h.stop:
	}
}
