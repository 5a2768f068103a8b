package startup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// Startup is what Init builds for a function's main: the checked settings,
// the logger and the AWS configuration its clients are built from.
type Startup struct {
	Settings Settings
	Logger   *slog.Logger
	AWS      aws.Config

	out io.Writer
}

// Init is the start-up both functions share: it reads the settings through
// getenv (os.Getenv in main), builds a JSON logger writing to out, installs
// the allow-list guard.EnvAllowList as guard's default policy and loads the
// AWS configuration. Unless GOMEMLIMIT is set, it sets the Go soft memory
// limit from the function's memory (see Memory). It warns when no dead-letter queue is configured. An
// error names the bad variable; the settings are checked first.
func Init(ctx context.Context, getenv func(string) string, out io.Writer) (*Startup, error) {
	s, err := LoadSettings(getenv)
	if err != nil {
		return nil, err
	}
	logger := NewLogger(out, s.LogLevel)
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(s.Memory.SoftLimit)
	}
	allow, err := guard.ParseAllowList(getenv(guard.EnvAllowList))
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
	if s.DLQURL == "" {
		logger.Warn("no dead-letter queue configured: permanent failures return to the queue for its redrive policy", "variable", EnvDLQURL)
	}
	return &Startup{Settings: s, Logger: logger, AWS: awsCfg, out: out}, nil
}

// OpenCatalog returns the catalog store the settings choose: the DynamoDB
// table CatalogTable, sealing server URLs with the KMS key SealKeyID when
// set, or, without a table, the directory CatalogDir, which it warns about
// (local runs only). An error names EnvCatalogDir.
func (st *Startup) OpenCatalog() (catalog.Store, error) {
	s := st.Settings
	if s.CatalogTable != "" && s.SealKeyID != "" {
		sealer := catalog.KMS{API: kms.NewFromConfig(st.AWS), KeyID: s.SealKeyID}
		return catalog.NewDynamo(dynamodb.NewFromConfig(st.AWS), s.CatalogTable, catalog.WithSealer(sealer)), nil
	}
	if s.CatalogTable != "" {
		return catalog.NewDynamo(dynamodb.NewFromConfig(st.AWS), s.CatalogTable), nil
	}
	dir, err := catalog.NewDir(s.CatalogDir)
	if err != nil {
		return nil, fmt.Errorf("configuration: %s: %w", EnvCatalogDir, err)
	}
	st.Logger.Warn("no catalog table configured: catalogs are kept in a local directory", "dir", s.CatalogDir)
	return dir, nil
}

// RunnerConfig returns the runner configuration of function: the settings'
// concurrency, budgets and dead-letter queue, SQS and Step Functions
// clients, the logger, and metrics written where the logger writes.
func (st *Startup) RunnerConfig(function string) runner.Config {
	s := st.Settings
	return runner.Config{
		Function:         function,
		Concurrency:      s.Concurrency,
		MemoryBudget:     s.Memory.Budget,
		Reserve:          s.Reserve,
		OperationTimeout: s.OperationTimeout,
		DLQURL:           s.DLQURL,
		Queue:            sqs.NewFromConfig(st.AWS),
		Tasks:            sfn.NewFromConfig(st.AWS),
		Logger:           st.Logger,
		Metrics:          st.out,
	}
}

// OpenSchedule returns the catalogs' schedule over CatalogTable (nil
// without a table: the directory store keeps no schedule) and the sender
// to the discover queue DiscoverQueueURL (nil without it, which it warns
// about, naming EnvDiscoverQueueURL).
func (st *Startup) OpenSchedule() (*schedule.Table, *schedule.Sender) {
	s := st.Settings
	var table *schedule.Table
	if s.CatalogTable != "" {
		table = schedule.New(dynamodb.NewFromConfig(st.AWS), s.CatalogTable, schedule.Options{})
	}
	if s.DiscoverQueueURL == "" {
		st.Logger.Warn("no discover queue configured: sweeps are refused and stale-call re-discoveries skipped", "variable", EnvDiscoverQueueURL)
		return table, nil
	}
	return table, &schedule.Sender{API: sqs.NewFromConfig(st.AWS), URL: s.DiscoverQueueURL}
}

// OpenVaults returns the vaults under SecretsPrefix, with OAuth
// credentials enabled: refreshed tokens are written back to the vault's
// secret, and every OAuth request goes through the guard's default policy.
func (st *Startup) OpenVaults() *vault.Resolver {
	sm := secretsmanager.NewFromConfig(st.AWS)
	return vault.NewResolver(sm, st.Settings.SecretsPrefix, vault.WithOAuth(vault.OAuth{Secrets: sm, Logger: st.Logger}))
}
