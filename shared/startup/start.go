package startup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awsconf"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/telemetry"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// Startup is what Init builds for a function's main: the checked settings,
// the logger and the AWS configuration its clients are built from.
type Startup struct {
	Function string // "discover" or "call": the logs' service
	Settings Settings
	Logger   *slog.Logger
	AWS      aws.Config
	Tracing  *telemetry.Tracing // Settings.Traces' tracer provider

	out io.Writer
}

// Init is the start-up both functions share: it checks environ's MCPFN_
// names (CheckNames) and reads the settings from it (LoadSettings), builds
// a JSON logger writing to out whose lines carry service=function, installs
// the allow-list guard.EnvAllowList as guard's default policy and loads the
// AWS configuration. Unless GOMEMLIMIT is set, it sets the Go soft memory
// limit from the function's memory (see Memory), and starts the tracing
// Settings.Traces chooses (telemetry.Start), which then traces the AWS
// clients' calls (Tracing.InstrumentAWS). It logs nothing, so that
// a failed init prints only Fail's line. Every error is a *ConfigError; the
// names and settings are checked first.
func Init(ctx context.Context, function string, environ []string, out io.Writer) (*Startup, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	nameErr := CheckNames(environ)
	s, err := LoadSettings(getenv)
	if nameErr != nil || err != nil {
		return nil, joinConfigErrors(nameErr, err)
	}
	logger := NewLogger(out, s.LogLevel).With(slog.String("service", function))
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(s.Memory.SoftLimit)
	}
	allow, err := guard.ParseAllowList(getenv(guard.EnvAllowList))
	if err != nil {
		return nil, configErrorf(guard.EnvAllowList, "%s: %w", guard.EnvAllowList, err)
	}
	policy, err := guard.NewPolicy(allow...)
	if err != nil {
		return nil, configErrorf(guard.EnvAllowList, "%s: %w", guard.EnvAllowList, err)
	}
	guard.SetDefault(policy)

	awsCfg, err := awsconf.Load(ctx)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("AWS configuration: %w", err)}
	}
	tracing, err := telemetry.Start(ctx, s.Traces, function, awsCfg)
	if err != nil {
		return nil, configErrorf(telemetry.EnvTraces, "%s: %w", telemetry.EnvTraces, err)
	}
	tracing.InstrumentAWS(&awsCfg)
	return &Startup{Function: function, Settings: s, Logger: logger, AWS: awsCfg, Tracing: tracing, out: out}, nil
}

// joinConfigErrors joins the non-nil *ConfigErrors of errs into one, its
// message starting "configuration: " once.
func joinConfigErrors(errs ...error) error {
	var names []string
	var msgs []string
	for _, err := range errs {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			continue
		}
		names = append(names, ce.Variables...)
		msgs = append(msgs, strings.TrimPrefix(ce.Error(), "configuration: "))
	}
	return &ConfigError{Variables: unique(names), Err: errors.New("configuration: " + strings.Join(msgs, "\n"))}
}

// OpenCatalog returns the catalog store the settings choose: the DynamoDB
// table CatalogTable, sealing server URLs with the KMS key SealKeyID when
// set, or, without a table, the directory CatalogDir, which it warns about
// (local runs only). An error names EnvCatalogDir. With tracing on, each
// operation is a span under the work item's (catalog.put, catalog.get,
// catalog.lookup, catalog.record_failure, catalog.server_url) naming the
// catalog id.
func (st *Startup) OpenCatalog() (catalog.Store, error) {
	s, err := st.openCatalog()
	if err != nil || !st.Tracing.Enabled() {
		return s, err
	}
	return tracedCatalog{next: s, tr: st.Tracing.ChildTracer(TracerName)}, nil
}

func (st *Startup) openCatalog() (catalog.Store, error) {
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
		return nil, configErrorf(EnvCatalogDir, "%s: %w", EnvCatalogDir, err)
	}
	st.Logger.Warn("no catalog table configured: catalogs are kept in a local directory", "dir", s.CatalogDir)
	return dir, nil
}

// RunnerConfig returns the runner configuration of the function: the settings'
// concurrency, budgets and dead-letter queue, SQS and Step Functions
// clients, the tracing, the logger, and metrics written where the logger writes. It
// warns when no dead-letter queue is configured. With tracing on, the task
// report (task.report) and the dead-letter send (dlq.send) are spans under
// the work item's.
func (st *Startup) RunnerConfig() runner.Config {
	s := st.Settings
	if s.DLQURL == "" {
		st.Logger.Warn("no dead-letter queue configured: permanent failures return to the queue for its redrive policy", "variable", EnvDLQURL)
	}
	var (
		queue runner.QueueAPI = sqs.NewFromConfig(st.AWS)
		tasks runner.TaskAPI  = sfn.NewFromConfig(st.AWS)
	)
	if st.Tracing.Enabled() {
		tr := st.Tracing.ChildTracer(TracerName)
		queue, tasks = tracedDLQ{next: queue, tr: tr}, tracedTasks{next: tasks, tr: tr}
	}
	return runner.Config{
		Function:         st.Function,
		Concurrency:      s.Concurrency,
		MemoryBudget:     s.Memory.Budget,
		CPUSlots:         s.Memory.CPUSlots(),
		Reserve:          s.Reserve,
		OperationTimeout: s.OperationTimeout,
		DLQURL:           s.DLQURL,
		Queue:            queue,
		Tasks:            tasks,
		Tracing:          st.Tracing,
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
// secret, every OAuth request goes through the guard's default policy, and
// each refresh is counted where the metrics go.
func (st *Startup) OpenVaults() *vault.Resolver {
	sm := secretsmanager.NewFromConfig(st.AWS)
	count := func(m string) { runner.EmitCounts(st.out, st.Function, time.Now(), map[string]int{m: 1}) }
	return vault.NewResolver(sm, st.Settings.SecretsPrefix, vault.WithOAuth(vault.OAuth{Secrets: sm, Logger: st.Logger, Count: count}))
}

// OpenPolicies returns the catalogs' policy documents, kept in
// CatalogTable, and a cache of their compilations; nil without a table
// (the directory store keeps no policy: every call is allowed).
func (st *Startup) OpenPolicies() (*policy.Store, *policy.Cache) {
	if st.Settings.CatalogTable == "" {
		return nil, nil
	}
	return policy.NewStore(dynamodb.NewFromConfig(st.AWS), st.Settings.CatalogTable), policy.NewCache()
}

// OpenAudit returns the audit chains in AuditTable; nil without one, which
// it warns about, naming EnvAuditTable, when a catalog table is set.
func (st *Startup) OpenAudit() *audit.Store {
	if st.Settings.AuditTable == "" {
		if st.Settings.CatalogTable != "" {
			st.Logger.Warn("no audit table configured: policy decisions are not audited", "variable", EnvAuditTable)
		}
		return nil
	}
	return audit.New(dynamodb.NewFromConfig(st.AWS), st.Settings.AuditTable)
}
