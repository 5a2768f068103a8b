// Command discover is the discover Lambda function: it lists one MCP
// server's tools and stores them as a catalog. Configuration: environment
// variables (docs/contract.md), read and checked once at init.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/work"
)

func main() {
	runner, err := setup(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "discover: init: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(runner.Handle)
}

func setup(ctx context.Context) (*work.Runner, error) {
	s, err := work.LoadSettings(os.Getenv)
	if err != nil {
		return nil, err
	}
	logger := work.NewLogger(s.LogLevel)
	allow, err := guard.ParseAllowList(os.Getenv(guard.EnvAllowList))
	if err != nil {
		return nil, fmt.Errorf("configuration: %s: %w", guard.EnvAllowList, err)
	}
	policy, err := guard.NewPolicy(allow...)
	if err != nil {
		return nil, fmt.Errorf("configuration: %s: %w", guard.EnvAllowList, err)
	}
	guard.SetDefault(policy)

	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	var store Store
	if s.CatalogTable != "" {
		store = catalog.NewDynamo(dynamodb.NewFromConfig(awsCfg), s.CatalogTable)
	} else {
		if store, err = catalog.NewDir(s.CatalogDir); err != nil {
			return nil, fmt.Errorf("configuration: %s: %w", work.EnvCatalogDir, err)
		}
		logger.Warn("no catalog table configured: storing catalogs in a local directory", "dir", s.CatalogDir)
	}
	if s.DLQURL == "" {
		logger.Warn("no dead-letter queue configured: permanent failures return to the queue for its redrive policy", "variable", work.EnvDLQURL)
	}
	h := &Handler{
		Connect:     ConnectMCP,
		Store:       store,
		Credentials: vault.NewResolver(secretsmanager.NewFromConfig(awsCfg), s.SecretsPrefix),
		Logger:      logger,
	}
	return work.NewRunner(work.Config{
		Function:         "discover",
		Concurrency:      s.Concurrency,
		Reserve:          s.Reserve,
		OperationTimeout: s.OperationTimeout,
		DLQURL:           s.DLQURL,
		Queue:            sqs.NewFromConfig(awsCfg),
		Tasks:            sfn.NewFromConfig(awsCfg),
		Logger:           logger,
		Metrics:          os.Stdout,
	}, h)
}
