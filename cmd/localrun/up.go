package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// upCatalog is the catalog up discovers the example server into, so that
// the CLIs have something to show.
const upCatalog = "example"

// UpReady is the line up prints once the stack is ready and the exports
// above it are complete.
const UpReady = "# The local stack is up. Ctrl-C (SIGINT) or SIGTERM stops it."

// up starts the stack (moto required), discovers the example server into
// catalog upCatalog, prints shell export lines for the CLIs and the
// functions' configuration, then UpReady, and keeps everything running
// until ctx ends. Then it stops everything it started.
func up(ctx context.Context, o options, stdout, stderr io.Writer) (err error) {
	if o.store == "dir" {
		return errors.New("-up needs moto for the tables the CLIs read; -store dir cannot be used")
	}
	cfg := stackConfig{rie: o.rie, timeout: o.timeout, store: "moto", stateless: o.stateless, progress: stdout}
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
		fmt.Fprintln(stdout, "Stopping the functions, moto, the example servers and the authorization server.")
		err = errors.Join(err, st.close())
	}()
	p := &printer{w: stdout}
	p.stack(st)
	if _, err := invokeAndPrint(ctx, st, p, discoverRequest(upCatalog, st.serverURL)); err != nil {
		return err
	}
	printExports(stdout, st)
	<-ctx.Done()
	fmt.Fprintln(stdout, "\nInterrupted.")
	return nil
}

// printExports prints the variables that point the CLIs and the AWS CLI
// at the local stack, as lines a shell can eval.
func printExports(w io.Writer, st *stack) {
	fmt.Fprintf(w, `
# Paste into a shell (or eval "$(... | grep ^export)") to use the local stack:
export AWS_ENDPOINT_URL=%s
export AWS_REGION=%s
export AWS_ACCESS_KEY_ID=%s
export AWS_SECRET_ACCESS_KEY=%s
export MCPFN_CATALOG_TABLE=%s
export MCPFN_CALLS_TABLE=%s
export MCPFN_SECRETS_PREFIX=%s
export MCPFN_DISCOVER_QUEUE_URL=%s
export EXAMPLE_SERVER_URL=%s
export DISCOVER_INVOKE_URL=%s
export CALL_INVOKE_URL=%s
# Try: bin/mcpfn-catalog list; bin/mcpfn-catalog get %s
#      curl -s "$CALL_INVOKE_URL" -d @events/call-direct.json   (its server_url is a placeholder; use "$EXAMPLE_SERVER_URL")
%s
`, st.moto.Endpoint(), localstack.Region, localstack.AccessKeyID, localstack.SecretAccessKey,
		catalogTable, callsTable, secretsPrefix, st.queueURL, st.serverURL,
		st.discover.URL(), st.call.URL(), upCatalog, UpReady)
}
