package startup

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		Memory:           Memory{MB: 512, SoftLimit: 322122547, Budget: 322122547 - 48<<20},
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
				EnvCatalogTable: "catalog", EnvCatalogDir: "/var/catalog", EnvCallsTable: "calls",
				EnvSecretsPrefix: "team/", EnvDLQURL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
				EnvDiscoverQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/discover",
				EnvResultsBucket:    "results", EnvMaxResultBytes: "100000", EnvBatchConcurrency: "4",
				EnvReserve: "3s", EnvOperationTimeout: "90s", EnvLogLevel: "debug",
				EnvMemorySize: "1024", EnvSealKeyID: "alias/mcpfn-server-urls",
			},
			want: func(s *Settings) {
				*s = Settings{
					CatalogTable: "catalog", CatalogDir: "/var/catalog", CallsTable: "calls",
					SecretsPrefix: "team/", DLQURL: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
					DiscoverQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/discover",
					ResultsBucket:    "results", MaxResultBytes: 100000, Concurrency: 4,
					Reserve: 3 * time.Second, OperationTimeout: 90 * time.Second, LogLevel: slog.LevelDebug,
					Memory:    Memory{MB: 1024, SoftLimit: 644245094, Budget: 644245094 - 48<<20},
					SealKeyID: "alias/mcpfn-server-urls",
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
		{name: "unknown log level", env: map[string]string{EnvLogLevel: "verbose"}, wantErr: []string{EnvLogLevel}},
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
