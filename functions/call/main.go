// Command call is the call Lambda function: it runs one MCP tool call and
// answers with an Anthropic tool_result block. Configuration: environment
// variables (docs/contract.md), read and checked once at init.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
)

func main() {
	runner, err := setup(context.Background())
	if err != nil {
		startup.Fail(os.Stdout, "call", err)
		os.Exit(1)
	}
	lambda.Start(runner)
}

func setup(ctx context.Context) (*runner.Runner, error) {
	st, err := startup.Init(ctx, "call", os.Environ(), os.Stdout)
	if err != nil {
		return nil, err
	}
	s, logger, awsCfg := st.Settings, st.Logger, st.AWS
	if s.CallsTable == "" {
		if err := s.LocalStore(startup.EnvCallsTable, "an in-memory ledger loses at-most-once"); err != nil {
			return nil, err
		}
	}
	store, err := st.OpenCatalog()
	if err != nil {
		return nil, err
	}
	lease := LedgerLease(s)
	var calls startup.Ledger
	if s.CallsTable != "" {
		calls = ledger.NewDynamo(dynamodb.NewFromConfig(awsCfg), s.CallsTable, lease)
	} else {
		calls = ledger.NewMemory(lease)
		logger.Warn("no calls table configured: the idempotency ledger is in memory (local runs only)", "variable", startup.EnvCallsTable)
	}
	opts := render.Options{MaxBytes: s.MaxResultBytes}
	if s.ResultsBucket != "" {
		opts.Bucket, opts.Objects, opts.KeyPrefix = s.ResultsBucket, s3.NewFromConfig(awsCfg), ResultsKeyPrefix
	}
	h := &Handler{
		Connect:     connect,
		Catalog:     store,
		Credentials: st.OpenVaults(),
		Ledger:      st.TraceLedger(calls),
		Render:      opts,
		Metrics:     os.Stdout,
		Logger:      logger,
		TaskPollMin: s.TaskPollMin,
	}
	// Typed nils stay out of the interfaces: nil means not configured.
	table, sender := st.OpenSchedule()
	if table != nil {
		h.Stale = table
	}
	if sender != nil {
		h.Rediscoveries = sender
	}
	h.Redeliver = &runner.QueueSender{API: sqs.NewFromConfig(awsCfg)}
	if policies, cache := st.OpenPolicies(); policies != nil {
		h.Policies, h.PolicyCache = policies, cache
	}
	if trail := st.OpenAudit(); trail != nil {
		h.Audit = trail
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
