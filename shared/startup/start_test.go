package startup_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
)

const testDLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/dlq"

// isolateAWS points the AWS configuration at empty files and a region, so
// that Init neither reads nor depends on the machine's AWS setup, and
// restores guard's default policy after the test.
func isolateAWS(t *testing.T) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	t.Cleanup(func() { guard.SetDefault(nil) })
}

// environ returns env as KEY=VALUE entries, as os.Environ.
func environ(env map[string]string) []string {
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	return kv
}

func TestInit(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		wantAllow bool // the installed default policy has allow entries
		wantWarn  bool // the missing DLQ is warned about (by RunnerConfig)
	}{
		{name: "defaults", wantWarn: true},
		{name: "allow-list and DLQ", env: map[string]string{guard.EnvAllowList: "127.0.0.1/32, 10.0.0.0/8:8080", startup.EnvDLQURL: testDLQ}, wantAllow: true},
		{name: "error level hides the warning", env: map[string]string{startup.EnvLogLevel: "error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t)
			getenv := func(k string) string { return tt.env[k] }
			var out bytes.Buffer
			st, err := startup.Init(t.Context(), "discover", environ(tt.env), &out)
			if err != nil {
				t.Fatal(err)
			}
			want, err := startup.LoadSettings(getenv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, st.Settings); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			if st.AWS.Region != "eu-west-3" {
				t.Errorf("AWS region = %q, want eu-west-3 from AWS_REGION", st.AWS.Region)
			}
			if got := guard.Default().HasAllow(); got != tt.wantAllow {
				t.Errorf("default policy %v has allow entries: %t, want %t", guard.Default(), got, tt.wantAllow)
			}
			if out.Len() > 0 {
				t.Errorf("Init logged:\n%s", out.String())
			}
			st.RunnerConfig()
			if tt.wantWarn && !strings.Contains(out.String(), `"service":"discover"`) {
				t.Errorf("the warning does not carry service=discover; logs:\n%s", out.String())
			}
			if got := strings.Contains(out.String(), `"msg":"no dead-letter queue configured`); got != tt.wantWarn {
				t.Errorf("DLQ warning logged: %t, want %t; logs:\n%s", got, tt.wantWarn, out.String())
			}
		})
	}
}

func TestInitFails(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		setenv      map[string]string // process environment, read by guard and the AWS SDK
		wantInError []string
		notInError  string
		keepsPolicy bool // failed before installing the allow-list
	}{
		{name: "bad setting", env: map[string]string{startup.EnvReserve: "soon"},
			wantInError: []string{"configuration: ", startup.EnvReserve}, keepsPolicy: true},
		{name: "settings are checked first", env: map[string]string{startup.EnvReserve: "soon", guard.EnvAllowList: "not-a-prefix"},
			wantInError: []string{startup.EnvReserve}, notInError: guard.EnvAllowList, keepsPolicy: true},
		{name: "unknown name and bad setting", env: map[string]string{"MCPFN_RESERV": "5s", startup.EnvBatchConcurrency: "many"},
			wantInError: []string{"configuration: MCPFN_RESERV: unknown setting; did you mean MCPFN_RESERVE?", startup.EnvBatchConcurrency}, keepsPolicy: true},
		{name: "bad allow entry", env: map[string]string{guard.EnvAllowList: "127.0.0.1/32,not-a-prefix"},
			wantInError: []string{"configuration: " + guard.EnvAllowList + ": ", "not-a-prefix"}, keepsPolicy: true},
		{name: "bad runtime API address", setenv: map[string]string{"AWS_LAMBDA_RUNTIME_API": "runtime:9001"},
			wantInError: []string{"configuration: " + guard.EnvAllowList + ": ", "AWS_LAMBDA_RUNTIME_API"}, keepsPolicy: true},
		{name: "unknown AWS profile", setenv: map[string]string{"AWS_PROFILE": "no-such-profile"},
			wantInError: []string{"AWS configuration: ", "no-such-profile"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t)
			before, err := guard.NewPolicy("192.0.2.0/24")
			if err != nil {
				t.Fatal(err)
			}
			guard.SetDefault(before)
			for k, v := range tt.setenv {
				t.Setenv(k, v)
			}
			st, err := startup.Init(t.Context(), "discover", environ(tt.env), &bytes.Buffer{})
			if err == nil {
				t.Fatalf("Init = %+v, want an error", st)
			}
			if _, ok := errors.AsType[*startup.ConfigError](err); !ok {
				t.Errorf("error %T is not a *startup.ConfigError", err)
			}
			for _, s := range tt.wantInError {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tt.notInError != "" && strings.Contains(err.Error(), tt.notInError) {
				t.Errorf("error %q names %s", err, tt.notInError)
			}
			if kept := guard.Default() == before; kept != tt.keepsPolicy {
				t.Errorf("the default policy was kept: %t, want %t", kept, tt.keepsPolicy)
			}
		})
	}
}

func TestOpenCatalog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		settings startup.Settings
		wantDir  bool // the directory store, warned about; else DynamoDB
		wantErr  string
	}{
		{name: "table", settings: startup.Settings{CatalogTable: "catalog", CatalogDir: filepath.Join(file, "unused")}},
		{name: "directory", settings: startup.Settings{CatalogDir: filepath.Join(t.TempDir(), "catalogs")}, wantDir: true},
		{name: "directory under a file", settings: startup.Settings{CatalogDir: filepath.Join(file, "catalogs")},
			wantErr: "configuration: " + startup.EnvCatalogDir + ": catalog: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			st := &startup.Startup{Settings: tt.settings, Logger: startup.NewLogger(&out, slog.LevelInfo)}
			store, err := st.OpenCatalog()
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("OpenCatalog = %T, %v; want an error starting %q", store, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, isDir := store.(*catalog.Dir)
			_, isDynamo := store.(*catalog.Dynamo)
			if isDir != tt.wantDir || isDynamo == tt.wantDir {
				t.Errorf("store is %T, want the directory store: %t", store, tt.wantDir)
			}
			warned := strings.Contains(out.String(), `"msg":"no catalog table configured`) && strings.Contains(out.String(), tt.settings.CatalogDir)
			if warned != tt.wantDir {
				t.Errorf("warning naming %s logged: %t, want %t; logs:\n%s", tt.settings.CatalogDir, warned, tt.wantDir, out.String())
			}
		})
	}
}

func TestRunnerConfig(t *testing.T) {
	isolateAWS(t)
	env := map[string]string{startup.EnvBatchConcurrency: "7", startup.EnvReserve: "3s", startup.EnvOperationTimeout: "90s", startup.EnvDLQURL: testDLQ}
	var out bytes.Buffer
	st, err := startup.Init(t.Context(), "discover", environ(env), &out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.RunnerConfig()
	want := runner.Config{Function: "discover", Concurrency: 7, Reserve: st.Settings.Reserve, OperationTimeout: st.Settings.OperationTimeout, DLQURL: testDLQ}
	got := runner.Config{Function: cfg.Function, Concurrency: cfg.Concurrency, Reserve: cfg.Reserve, OperationTimeout: cfg.OperationTimeout, DLQURL: cfg.DLQURL}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunnerConfig (-want +got):\n%s", diff)
	}
	if want.Reserve.String() != "3s" || want.OperationTimeout.String() != "1m30s" {
		t.Errorf("settings reserve %s, operation timeout %s; want 3s and 1m30s", want.Reserve, want.OperationTimeout)
	}
	if _, ok := cfg.Queue.(*sqs.Client); !ok {
		t.Errorf("Queue is %T, want *sqs.Client", cfg.Queue)
	}
	if _, ok := cfg.Tasks.(*sfn.Client); !ok {
		t.Errorf("Tasks is %T, want *sfn.Client", cfg.Tasks)
	}
	if cfg.Logger != st.Logger || cfg.Metrics != &out {
		t.Errorf("logger %p and metrics %T, want Init's logger %p and writer", cfg.Logger, cfg.Metrics, st.Logger)
	}
	noop := runner.ProcessorFunc(func(context.Context, *runner.Item) (any, error) { return nil, nil })
	if _, err := runner.NewRunner(cfg, noop); err != nil {
		t.Errorf("NewRunner refuses the configuration: %v", err)
	}
}
