package onboard

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Browser answers the authorization request with the operator's browser:
// it writes the authorization URL to w, calls open with it (nil: the
// operator opens it), and waits on ln for the redirect, which it answers
// with a short page. ln is the loopback listener RedirectURL names; the
// fetcher closes it when it returns.
func Browser(ln net.Listener, open func(string) error, w io.Writer) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		type answer struct {
			res *auth.AuthorizationResult
			err error
		}
		answers := make(chan answer, 1)
		srv := &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("code") == "" && r.URL.Query().Get("error") == "" {
					http.NotFound(rw, r) // a favicon, say
					return
				}
				res, err := redirectResult(r.URL.String())
				select {
				case answers <- answer{res, err}:
				default:
				}
				rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
				if err != nil {
					fmt.Fprintln(rw, "mcpfn-auth: the authorization failed; see the terminal.")
					return
				}
				fmt.Fprintln(rw, "mcpfn-auth: authorized. You can close this window.")
			}),
		}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()

		fmt.Fprintf(w, "Open this URL in a browser to authorize:\n\n  %s\n\n", args.URL)
		if open != nil {
			if err := open(args.URL); err != nil {
				fmt.Fprintf(w, "(could not open a browser: %v)\n", err)
			}
		}
		select {
		case a := <-answers:
			return a.res, a.err
		case <-ctx.Done():
			return nil, fmt.Errorf("onboard: waiting for the authorization redirect: %w", context.Cause(ctx))
		}
	}
}
