// Command localrun runs the discover and call functions on this machine
// without Docker: it builds both bootstrap binaries for the host, starts the
// example MCP server on loopback, a store (DynamoDB tables in moto when moto
// is importable, else the embedded directory store), each function under its
// own aws-lambda-rie, invokes them with files from events/, prints the
// results and the stored catalog, and stops everything it started.
//
// Usage (from the repository root; `make run` and `make invoke-<event>`):
//
//	go run ./cmd/localrun [-event events/NAME.json] [-v] [-store auto|moto|dir]
//	go run ./cmd/localrun -up [-v]
//
// It exits 1 naming each event whose outcome is not the one the event
// expects (expect.go: an errorType for the samples that must fail, else
// success without batch item failures). With -up (`make up`) it starts the
// stack over moto, discovers the example server into catalog "example",
// prints export lines for the CLIs, and keeps everything running until
// SIGINT or SIGTERM.
//
// Without -event it runs discover and then call with the direct-invocation
// samples, the same with the OAuth samples, then the sweep. With moto, it
// also starts a loopback authorization server (rotating refresh tokens),
// the example server requiring its tokens, and the vault example-oauth in
// moto's Secrets Manager holding an mcp_oauth credential for it whose
// access token has expired: the OAuth samples (they name that vault; their
// placeholder server becomes the OAuth one) show the refresh and the
// rotated refresh token stored back. The directory store has no vaults, so
// -store dir skips them. Before a sweep event it makes every catalog it
// discovered due now (next_due set to the present on the head, which a
// deployed stack reaches by waiting the refresh interval) and after it
// prints the discover requests the sweep enqueued. Every server_url that names a placeholder host (example.com and
// the other reserved example domains) is replaced by the example server's URL.
// After the default events it runs two long calls through the call state
// machine when Node is installed (longcall.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// Default events of a run without -event: discover, then call.
var defaultEvents = []string{
	"events/discover-direct.json", "events/call-direct.json",
	"events/discover-oauth.json", "events/call-oauth.json",
	"events/discover-sweep.json",
}

type options struct {
	rie       string
	events    []string
	timeout   time.Duration
	store     string
	stateless bool
	verbose   bool
	up        bool
}

func main() {
	var o options
	var event string
	flag.StringVar(&o.rie, "rie", "", "path of aws-lambda-rie (default: PATH, then $(go env GOPATH)/bin)")
	flag.StringVar(&event, "event", "", "run only this event file (default: discover then call)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "function timeout under the RIE")
	flag.StringVar(&o.store, "store", "auto", "store: auto (moto when available, else a directory), moto or dir")
	flag.BoolVar(&o.stateless, "stateless", false, "serve the example server statelessly (protocol 2026-07-28)")
	flag.BoolVar(&o.verbose, "v", false, "stream the functions' logs")
	flag.BoolVar(&o.up, "up", false, "keep the stack running until interrupted and print its variables (make up)")
	flag.Parse()
	o.events = defaultEvents
	if event != "" {
		o.events = []string{event}
	}
	switch o.store {
	case "auto", "moto", "dir":
	default:
		fmt.Fprintf(os.Stderr, "localrun: -store %q: want auto, moto or dir\n", o.store)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "localrun: %v\n", err)
		os.Exit(1)
	}
}

// run starts the stack, invokes o.events in order and stops the stack, also
// when ctx is cancelled (Ctrl-C). It fails naming each event whose outcome
// is not the expected one (expectedErrors). With o.up it runs up instead.
func run(ctx context.Context, o options, stdout, stderr io.Writer) (err error) {
	if o.up {
		return up(ctx, o, stdout, stderr)
	}
	invs := make([]invocation, 0, len(o.events))
	for _, path := range o.events {
		inv, err := readEvent(path)
		if err != nil {
			return err
		}
		invs = append(invs, inv)
	}
	cfg := stackConfig{rie: o.rie, timeout: o.timeout, store: o.store, stateless: o.stateless, progress: stdout}
	if o.verbose {
		cfg.logs = stderr
	}
	if cfg.rie == "" {
		if cfg.rie, err = localstack.FindRIE(); err != nil {
			return err
		}
	}
	st, err := startStack(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if st.oauth != nil {
			fmt.Fprintln(stdout, "\nStopping the functions, the store, the example servers and the authorization server.")
		} else {
			fmt.Fprintln(stdout, "\nStopping the functions, the store and the example server.")
		}
		err = errors.Join(err, st.close())
	}()
	p := &printer{w: stdout}
	p.stack(st)

	var discovered []string
	var mismatched []error // events whose outcome is not the expected one
	defer func() { err = errors.Join(err, errors.Join(mismatched...)) }()
	for _, inv := range invs {
		if err := ctx.Err(); err != nil {
			return err
		}
		usesOAuth := inv.namesVault(oauthVault)
		if usesOAuth && st.oauth == nil {
			p.skipped(inv, "it names the OAuth vault "+oauthVault+", and the directory store keeps no vaults (run with moto for the OAuth part)")
			continue
		}
		oauthURL := ""
		if st.oauth != nil {
			oauthURL = st.oauth.serverURL
		}
		inv = inv.withServer(st.serverURL, oauthURL)
		if inv.function == "call" {
			// A call naming a catalog is refused unless the tool is in it:
			// discover the example server into each such catalog first.
			for _, id := range inv.catalogIDs() {
				if _, err := st.store.Get(ctx, id); err == nil {
					continue
				}
				pre := discoverRequest(id, st.serverURL)
				if usesOAuth {
					pre = discoverRequest(id, oauthURL, oauthVault)
				}
				if _, err := invokeAndPrint(ctx, st, p, pre); err != nil {
					return err
				}
				discovered = append(discovered, id)
			}
		}
		if inv.isSweep() && st.moto != nil {
			p.makingDue(discovered)
			if err := st.makeDue(ctx, discovered); err != nil {
				return err
			}
		}
		res, err := invokeAndPrint(ctx, st, p, inv)
		if err != nil {
			return err
		}
		if err := checkOutcome(inv.path, res); err != nil {
			mismatched = append(mismatched, err)
		}
		if inv.function == "discover" {
			for _, id := range inv.catalogIDs() {
				if !slices.Contains(discovered, id) {
					discovered = append(discovered, id)
				}
			}
		}
		if inv.isSweep() {
			queued, err := st.takeQueued(ctx)
			if err != nil {
				return err
			}
			p.queued(queued)
		}
	}
	return showLongCall(ctx, o, cfg, st, ".", stdout)
}

// invokeAndPrint invokes inv, prints its result, and returns it.
func invokeAndPrint(ctx context.Context, st *stack, p *printer, inv invocation) (localstack.Result, error) {
	fn := st.discover
	if inv.function == "call" {
		fn = st.call
	}
	p.invoking(inv)
	before := len(st.tasks.Reports())
	dlqBefore := st.dlqDepth(ctx, inv.function)
	res, err := fn.Invoke(ctx, inv.payload)
	if err != nil {
		return res, err
	}
	p.result(inv, res)
	writeWaterfall(p.w, st.traces.take())
	p.taskReports(st.tasks.Reports()[before:])
	p.deadLetters(st.dlqDepth(ctx, inv.function) - dlqBefore)
	if st.oauth != nil && inv.namesVault(oauthVault) {
		r, err := st.oauth.report(ctx, res.Logs)
		if err != nil {
			return res, err
		}
		p.oauth(r)
	}
	if inv.function == "discover" {
		for _, id := range inv.catalogIDs() {
			c, err := st.store.Get(ctx, id)
			p.catalog(id, c, err)
		}
	}
	return res, nil
}
