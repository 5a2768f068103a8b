// Command discover is the discover Lambda function: it lists one MCP
// server's tools and stores them as a catalog. Configuration: environment
// variables (docs/contract.md), read and checked once at init.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
)

func main() {
	runner, err := setup(context.Background())
	if err != nil {
		startup.Fail(os.Stdout, "discover", err)
		os.Exit(1)
	}
	lambda.Start(runner)
}

func setup(ctx context.Context) (*runner.Runner, error) {
	st, err := startup.Init(ctx, "discover", os.Environ(), os.Stdout)
	if err != nil {
		return nil, err
	}
	store, err := st.OpenCatalog()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		Connect:     connect,
		Store:       store,
		Credentials: st.OpenVaults(),
		Metrics:     os.Stdout,
		Logger:      st.Logger,
	}
	// Typed nils stay out of the interfaces: nil means not configured.
	table, sender := st.OpenSchedule()
	if table != nil {
		h.Schedule = table
	}
	if sender != nil {
		h.Queue = sender
	}
	if a := st.OpenAudit(); a != nil {
		h.Auditor = a
	}
	return runner.NewRunner(st.RunnerConfig(), h)
}

// connect is the Handler's Connect: mcp.Connect, with a nil interface (not
// a typed nil) on error.
func connect(ctx context.Context, cfg mcp.Config) (Conn, error) {
	c, err := mcp.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}
