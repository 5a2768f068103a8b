package startup

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/telemetry"
)

func TestLoadSettings(t *testing.T) {
	defaults := Settings{
		CatalogDir:       filepath.Join(os.TempDir(), "mcpfn-catalog"),
		SecretsPrefix:    "mcpfn/vaults/",
		MaxResultBytes:   200_000,
		Concurrency:      10,
		Reserve:          5 * time.Second,
		OperationTimeout: 2 * time.Minute,
		LogLevel:         slog.LevelInfo,
		TaskPollMin:      15 * time.Second,
		Memory:           Memory{MB: 1024, SoftLimit: 644245094, Budget: 644245094 - 48<<20},
		Traces:           telemetry.Off,
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    func(*Settings)
		wantErr []string // variable names the error must mention
	}{
		{name: "empty environment", want: func(*Settings) {}},
		{
			name: "everything set",
			env: map[string]string{
				EnvCatalogTable: "catalog", EnvCallsTable: "calls",
				EnvSecretsPrefix: "team/", EnvDLQURL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
				EnvDiscoverQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/discover",
				EnvResultsBucket:    "results", EnvMaxResultBytes: "100000", EnvBatchConcurrency: "4",
				EnvReserve: "3s", EnvOperationTimeout: "90s", EnvLogLevel: "debug",
				EnvMemorySize: "2048", EnvLocal: "1", EnvFunctionName: "mcpfn-call", EnvFunctionTimeout: "180",
				EnvSealKeyID: "alias/mcpfn-server-urls", EnvTaskPollMin: "30", telemetry.EnvTraces: "otlp",
			},
			want: func(s *Settings) {
				*s = Settings{
					CatalogTable: "catalog", CatalogDir: filepath.Join(os.TempDir(), "mcpfn-catalog"), CallsTable: "calls",
					SecretsPrefix: "team/", DLQURL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
					DiscoverQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/discover",
					ResultsBucket:    "results", MaxResultBytes: 100000, Concurrency: 4,
					Reserve: 3 * time.Second, OperationTimeout: 90 * time.Second, LogLevel: slog.LevelDebug,
					Memory: Memory{MB: 2048, SoftLimit: 1288490188, Budget: 1288490188 - 48<<20},
					Local:  true, InLambda: true, SealKeyID: "alias/mcpfn-server-urls",
					TaskPollMin: 30 * time.Second, Traces: telemetry.OTLP,
				}
			},
		},
		{name: "operation timeout at the mcp bound", env: map[string]string{EnvOperationTimeout: "2m"}, want: func(s *Settings) { s.OperationTimeout = 2 * time.Minute }},
		{name: "operation timeout over the mcp bound", env: map[string]string{EnvOperationTimeout: "2m1s"}, wantErr: []string{EnvOperationTimeout}},
		{name: "reserve not a duration", env: map[string]string{EnvReserve: "5"}, wantErr: []string{EnvReserve}},
		{name: "zero concurrency", env: map[string]string{EnvBatchConcurrency: "0"}, wantErr: []string{EnvBatchConcurrency}},
		{name: "tiny result limit", env: map[string]string{EnvMaxResultBytes: "10"}, wantErr: []string{EnvMaxResultBytes}},
		{name: "DLQ name instead of URL", env: map[string]string{EnvDLQURL: "my-dlq"}, wantErr: []string{EnvDLQURL}},
		{name: "discover queue name instead of URL", env: map[string]string{EnvDiscoverQueueURL: "discover"}, wantErr: []string{EnvDiscoverQueueURL}},
		{name: "table and discover queue without a seal key", env: map[string]string{EnvCatalogTable: "catalog", EnvDiscoverQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/discover"}, wantErr: []string{EnvSealKeyID}},
		{name: "table without a discover queue needs no seal key", env: map[string]string{EnvCatalogTable: "catalog"}, want: func(s *Settings) { s.CatalogTable = "catalog" }},
		{name: "memory below Lambda's least", env: map[string]string{EnvMemorySize: "64"}, wantErr: []string{EnvMemorySize}},
		{name: "memory not a number", env: map[string]string{EnvMemorySize: "512MB"}, wantErr: []string{EnvMemorySize}},
		{name: "traces off", env: map[string]string{telemetry.EnvTraces: "off"}, want: func(*Settings) {}},
		{name: "traces xray", env: map[string]string{telemetry.EnvTraces: "xray"}, want: func(s *Settings) { s.Traces = telemetry.XRay }},
		{name: "traces misspelt", env: map[string]string{telemetry.EnvTraces: "otpl"}, wantErr: []string{telemetry.EnvTraces}},
		{name: "unknown log level", env: map[string]string{EnvLogLevel: "verbose"}, wantErr: []string{EnvLogLevel}},
		{name: "task poll floor of 0", env: map[string]string{EnvTaskPollMin: "0"}, wantErr: []string{EnvTaskPollMin}},
		{name: "task poll floor of 901", env: map[string]string{EnvTaskPollMin: "901"}, wantErr: []string{EnvTaskPollMin}},
		{name: "task poll floor of 900", env: map[string]string{EnvTaskPollMin: "900"}, want: func(s *Settings) { s.TaskPollMin = 900 * time.Second }},
		{name: "local run flag", env: map[string]string{EnvLocal: "1"}, want: func(s *Settings) { s.Local = true }},
		{name: "local run flag off", env: map[string]string{EnvLocal: "0"}, want: func(*Settings) {}},
		{name: "local run flag not 1", env: map[string]string{EnvLocal: "true"}, wantErr: []string{EnvLocal}},

		// Combinations that cannot work.
		{name: "reserve equal to the operation timeout", env: map[string]string{EnvReserve: "5s", EnvOperationTimeout: "5s"}, // boundary: allowed
			want: func(s *Settings) { s.Reserve, s.OperationTimeout = 5*time.Second, 5*time.Second }},
		{name: "reserve longer than the operation timeout", env: map[string]string{EnvReserve: "6s", EnvOperationTimeout: "5s"},
			wantErr: []string{EnvReserve, EnvOperationTimeout}},
		{name: "reserve longer than the default operation timeout", env: map[string]string{EnvReserve: "3m"},
			wantErr: []string{EnvReserve, EnvOperationTimeout}},
		{name: "reserve leaves no budget in the function timeout", env: map[string]string{EnvReserve: "5s", EnvFunctionTimeout: "6"}, // 5s + 1s least budget
			wantErr: []string{EnvReserve, EnvFunctionTimeout}},
		{name: "reserve leaves the least budget", env: map[string]string{EnvReserve: "5s", EnvFunctionTimeout: "7"},
			want: func(*Settings) {}},
		{name: "operation timeout never runs out", env: map[string]string{EnvReserve: "5s", EnvOperationTimeout: "25s", EnvFunctionTimeout: "30"}, // 5s + 25s = 30s
			wantErr: []string{EnvOperationTimeout, EnvReserve, EnvFunctionTimeout}},
		{name: "operation timeout runs out", env: map[string]string{EnvReserve: "5s", EnvOperationTimeout: "24s", EnvFunctionTimeout: "30"},
			want: func(s *Settings) { s.OperationTimeout = 24 * time.Second }},
		{name: "default operation timeout is bounded by the deadline", env: map[string]string{EnvFunctionTimeout: "30"},
			want: func(*Settings) {}},
		{name: "function timeout not seconds", env: map[string]string{EnvFunctionTimeout: "30s"}, wantErr: []string{EnvFunctionTimeout}},
		{name: "catalog table and directory", env: map[string]string{EnvCatalogTable: "catalog", EnvCatalogDir: "/var/catalog"},
			wantErr: []string{EnvCatalogTable, EnvCatalogDir}},

		// Inside Lambda (the emulator too), the local stores need MCPFN_LOCAL=1.
		{name: "Lambda without a catalog table", env: map[string]string{EnvFunctionName: "mcpfn-discover"},
			wantErr: []string{EnvCatalogTable, EnvLocal}},
		{name: "Lambda with a catalog directory", env: map[string]string{EnvFunctionName: "mcpfn-discover", EnvCatalogDir: "/tmp/catalog"},
			wantErr: []string{EnvCatalogDir, EnvLocal}},
		{name: "Lambda with a catalog table", env: map[string]string{EnvFunctionName: "mcpfn-discover", EnvCatalogTable: "catalog"},
			want: func(s *Settings) { s.CatalogTable, s.InLambda = "catalog", true }},
		{name: "local run in the emulator with a catalog directory", env: map[string]string{EnvFunctionName: "discover", EnvLocal: "1", EnvCatalogDir: "/tmp/catalog"},
			want: func(s *Settings) { s.CatalogDir, s.InLambda, s.Local = "/tmp/catalog", true, true }},
		{
			name:    "every bad variable is named",
			env:     map[string]string{EnvReserve: "-1s", EnvBatchConcurrency: "many"},
			wantErr: []string{EnvReserve, EnvBatchConcurrency},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadSettings(func(k string) string { return tt.env[k] })
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("LoadSettings = %+v, want an error", got)
				}
				for _, name := range tt.wantErr {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error %q does not name %s", err, name)
					}
				}
				ce, ok := errors.AsType[*ConfigError](err)
				if !ok {
					t.Fatalf("error %T is not a *ConfigError", err)
				}
				for _, name := range tt.wantErr {
					if name != EnvLocal && !slices.Contains(ce.Variables, name) { // MCPFN_LOCAL is advice, not at fault
						t.Errorf("ConfigError.Variables = %q, want %s among them", ce.Variables, name)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("LoadSettings (-want +got):\n%s", diff)
			}
		})
	}
}
