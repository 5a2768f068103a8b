package work_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/work"
	"github.com/mcpfn/mcpfn/shared/work/worktest"
)

// statsConn is a consumer's connection interface, as the functions declare.
type statsConn interface {
	Stats() mcp.Stats
	Close() error
}

var _ statsConn = (*mcp.Conn)(nil)

func TestConnectMCP(t *testing.T) {
	srv := mcptest.NewServer(t, mcptest.Options{})
	var connect work.ConnectFunc[statsConn] = work.ConnectMCP[statsConn]

	t.Run("connects", func(t *testing.T) {
		conn, err := connect(t.Context(), mcp.Config{URL: srv.URL, HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if st := conn.Stats(); st.ServerName != mcptest.Name || st.ProtocolVersion == "" {
			t.Errorf("stats %+v, want a negotiated connection to %s", st, mcptest.Name)
		}
	})
	t.Run("a failure is a nil interface", func(t *testing.T) {
		conn, err := connect(t.Context(), mcp.Config{URL: worktest.ClosedPortURL(t), HTTPClient: &http.Client{}})
		if err == nil || conn != nil {
			t.Errorf("ConnectMCP = %#v, %v; want a nil interface and an error", conn, err)
		}
	})
	t.Run("an interface the connection lacks", func(t *testing.T) {
		before := srv.Requests()
		conn, err := work.ConnectMCP[interface{ Missing() }](t.Context(), mcp.Config{URL: srv.URL, HTTPClient: srv.Client()})
		if err == nil || conn != nil || !strings.Contains(err.Error(), "does not implement") {
			t.Errorf("ConnectMCP = %#v, %v; want a nil interface and an error naming the mismatch", conn, err)
		}
		if srv.Requests() == before {
			t.Error("no request reached the server: the mismatch was not found after connecting")
		}
	})
}
