package runnertest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// GarbageServer starts a loopback server that answers every request with
// 200, Content-Type application/json and a body that is not JSON-RPC, and
// returns its MCP URL. tb.Cleanup stops it.
func GarbageServer(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `<html>this is not JSON-RPC</html>`)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// ClosedPortURL returns an MCP URL on a loopback port nothing listens on:
// the port was just handed out by the kernel and released.
func ClosedPortURL(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return "http://" + addr + "/mcp"
}
