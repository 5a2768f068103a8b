// Command exampleserver serves a small MCP server over Streamable HTTP on a
// loopback address, for `make run` and for trying the functions locally.
//
// Usage:
//
//	exampleserver [-addr 127.0.0.1:0] [-stateless] [-oauth-issuer URL]
//
// The first line on stdout is "exampleserver: serving http://HOST:PORT/mcp".
// With -oauth-issuer, /mcp requires a bearer token that authorization
// server's introspection endpoint reports active, and the RFC 9728
// metadata naming it is served at
// /.well-known/oauth-protected-resource/mcp. It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNotLoopback is returned for a listen address outside loopback.
var ErrNotLoopback = errors.New("exampleserver: listen address is not loopback")

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback `host:port` to listen on (port 0 picks a free one)")
	stateless := flag.Bool("stateless", false, "serve statelessly (protocol 2026-07-28) instead of with sessions (2025-11-25)")
	issuer := flag.String("oauth-issuer", "", "require bearer tokens this authorization server's introspection endpoint reports active")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, config{addr: *addr, stateless: *stateless, issuer: *issuer}, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// config is what serve serves: addr must be a loopback IP and port; issuer
// "" serves /mcp without authorization.
type config struct {
	addr      string
	stateless bool
	issuer    string
}

// serve listens on c.addr, prints the MCP endpoint URL to out, and serves
// until ctx is done. Errors wrap ErrNotLoopback or ErrIssuer, or are the
// listener's.
func serve(ctx context.Context, c config, out io.Writer) error {
	ap, err := netip.ParseAddrPort(c.addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("%w: %q (want e.g. 127.0.0.1:8080)", ErrNotLoopback, c.addr)
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("exampleserver: %w", err)
	}
	server := newServer(time.Now)
	mux := http.NewServeMux()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: c.stateless})
	if c.issuer != "" {
		if h, err = protect(ctx, c.issuer, "http://"+ln.Addr().String(), mux, h); err != nil {
			ln.Close()
			return err
		}
	}
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	fmt.Fprintf(out, "exampleserver: serving http://%s/mcp\n", ln.Addr())
	if c.issuer != "" {
		fmt.Fprintf(out, "exampleserver: /mcp requires a bearer token from %s\n", c.issuer)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("exampleserver: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
