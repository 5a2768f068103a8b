package startup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// Environment variables the functions read (docs/contract.md).
const (
	EnvCatalogTable     = "MCPFN_CATALOG_TABLE"
	EnvCatalogDir       = "MCPFN_CATALOG_DIR"
	EnvCallsTable       = "MCPFN_CALLS_TABLE"
	EnvSecretsPrefix    = "MCPFN_SECRETS_PREFIX"
	EnvDLQURL           = "MCPFN_DLQ_URL"
	EnvDiscoverQueueURL = "MCPFN_DISCOVER_QUEUE_URL"
	EnvResultsBucket    = "MCPFN_RESULTS_BUCKET"
	EnvMaxResultBytes   = "MCPFN_MAX_RESULT_BYTES"
	EnvBatchConcurrency = "MCPFN_BATCH_CONCURRENCY"
	EnvReserve          = "MCPFN_RESERVE"
	EnvOperationTimeout = "MCPFN_OPERATION_TIMEOUT"
	EnvLogLevel         = "MCPFN_LOG_LEVEL"
	EnvTaskPollMin      = "MCPFN_TASK_POLL_MIN_SECONDS"
	EnvSealKeyID        = "MCPFN_SEAL_KEY_ID"
	EnvAuditTable       = "MCPFN_AUDIT_TABLE"
	EnvLocal            = "MCPFN_LOCAL" // "1": a local run, which may use the local stores
)

// Variables the Lambda runtime sets that the settings read.
const (
	EnvFunctionName    = "AWS_LAMBDA_FUNCTION_NAME"    // set: running inside Lambda (or its emulator)
	EnvFunctionTimeout = "AWS_LAMBDA_FUNCTION_TIMEOUT" // seconds; set by the emulator, not by Lambda
)

// Defaults and bounds of the settings.
const (
	DefaultSecretsPrefix = "mcpfn/vaults/"
	MaxConcurrency       = 100
	MinMaxResultBytes    = 1 << 10
	MaxMaxResultBytes    = 6 << 20 // Lambda's synchronous response limit
	DefaultTaskPollMin   = 15 * time.Second
	MaxTaskPollMin       = 900 * time.Second
)

// MaxOperationTimeout is the longest operation timeout: what package mcp
// bounds a listing and a call by.
const MaxOperationTimeout = min(mcp.ListTimeout, mcp.CallTimeout)

// Settings is the functions' configuration, read once at init. The egress
// allow-list (guard.EnvAllowList) is not here: Init parses it with the
// guard package.
type Settings struct {
	CatalogTable     string // empty: the directory store at CatalogDir
	CatalogDir       string
	CallsTable       string // empty: an in-memory ledger (local runs only)
	SecretsPrefix    string
	DLQURL           string
	DiscoverQueueURL string // empty: no sweep, no stale-call re-discovery
	ResultsBucket    string
	MaxResultBytes   int
	Concurrency      int
	Reserve          time.Duration
	OperationTimeout time.Duration
	LogLevel         slog.Level
	Memory           Memory         // from EnvMemorySize
	Local            bool           // EnvLocal is "1"
	InLambda         bool           // EnvFunctionName is set
	SealKeyID        string         // KMS key sealing server URLs; required with CatalogTable and DiscoverQueueURL
	TaskPollMin      time.Duration  // the floor of a pending call's poll_after_seconds; 1-900 s
	Traces           telemetry.Mode // telemetry.EnvTraces; default off
	AuditTable       string         // the policy decisions' audit chains; empty: none kept
}

// LoadSettings reads the settings through getenv (os.Getenv in main),
// applies the defaults and checks every value and every combination (see
// checkCombinations). Inside Lambda without EnvLocal it refuses the
// directory store. The error is a *ConfigError naming each bad variable.
func LoadSettings(getenv func(string) string) (Settings, error) {
	s := Settings{
		CatalogTable:     getenv(EnvCatalogTable),
		CatalogDir:       getenv(EnvCatalogDir),
		CallsTable:       getenv(EnvCallsTable),
		SecretsPrefix:    getenv(EnvSecretsPrefix),
		DLQURL:           getenv(EnvDLQURL),
		DiscoverQueueURL: getenv(EnvDiscoverQueueURL),
		ResultsBucket:    getenv(EnvResultsBucket),
		SealKeyID:        getenv(EnvSealKeyID),
		AuditTable:       getenv(EnvAuditTable),
		MaxResultBytes:   render.DefaultMaxBytes,
		Concurrency:      runner.DefaultConcurrency,
		Reserve:          runner.DefaultReserve,
		OperationTimeout: MaxOperationTimeout,
		LogLevel:         slog.LevelInfo,
		TaskPollMin:      DefaultTaskPollMin,
	}
	if s.CatalogDir == "" {
		s.CatalogDir = filepath.Join(os.TempDir(), "mcpfn-catalog")
	}
	if s.SecretsPrefix == "" {
		s.SecretsPrefix = DefaultSecretsPrefix
	}
	r := &envReader{getenv: getenv}
	for _, name := range []string{EnvDLQURL, EnvDiscoverQueueURL} {
		r.queueURL(name)
	}
	if s.SealKeyID == "" && s.CatalogTable != "" && s.DiscoverQueueURL != "" {
		r.bad(EnvSealKeyID, "required with %s and %s: the KMS key that seals the server URLs of scheduled catalogs", EnvCatalogTable, EnvDiscoverQueueURL)
	}
	pollMin := int(s.TaskPollMin / time.Second)
	r.integer(EnvTaskPollMin, &pollMin, 1, int(MaxTaskPollMin/time.Second), "want whole seconds from 1 to %d", int(MaxTaskPollMin/time.Second))
	s.TaskPollMin = time.Duration(pollMin) * time.Second
	r.integer(EnvMaxResultBytes, &s.MaxResultBytes, MinMaxResultBytes, MaxMaxResultBytes, "want an integer from %d to %d", MinMaxResultBytes, MaxMaxResultBytes)
	r.integer(EnvBatchConcurrency, &s.Concurrency, 1, MaxConcurrency, "want an integer from 1 to %d", MaxConcurrency)
	r.duration(EnvReserve, &s.Reserve, time.Nanosecond, time.Duration(math.MaxInt64), "want a positive Go duration such as 5s")
	r.duration(EnvOperationTimeout, &s.OperationTimeout, runner.DefaultMinBudget, MaxOperationTimeout, "want a Go duration from %s to %s", runner.DefaultMinBudget, MaxOperationTimeout)
	if mb, err := parseMemoryMB(getenv(EnvMemorySize)); err != nil {
		r.bad(EnvMemorySize, "%v", err)
	} else {
		s.Memory = PlanMemory(mb)
	}
	if v := getenv(EnvLogLevel); v != "" {
		if err := s.LogLevel.UnmarshalText([]byte(v)); err != nil {
			r.bad(EnvLogLevel, "want debug, info, warn or error")
		}
	}
	if m, err := telemetry.ParseMode(getenv(telemetry.EnvTraces)); err != nil {
		r.bad(telemetry.EnvTraces, "%v", err)
	} else {
		s.Traces = m
	}
	switch v := getenv(EnvLocal); v {
	case "", "0":
	case "1":
		s.Local = true
	default:
		r.bad(EnvLocal, "want 1 (a local run) or nothing")
	}
	s.InLambda = getenv(EnvFunctionName) != ""
	if len(r.errs) == 0 {
		for _, c := range checkCombinations(s, getenv) {
			r.names = append(r.names, c.names...)
			r.errs = append(r.errs, c.err)
		}
	}
	if err := errors.Join(r.errs...); err != nil {
		return Settings{}, &ConfigError{Variables: unique(r.names), Err: fmt.Errorf("configuration: %w", err)}
	}
	return s, nil
}

// envReader reads variables through getenv and collects every refusal,
// so one start-up names all the bad variables at once.
type envReader struct {
	getenv func(string) string
	errs   []error
	names  []string
}

// bad records a refusal of the variable name and its value.
func (r *envReader) bad(name, format string, args ...any) {
	r.names = append(r.names, name)
	r.errs = append(r.errs, fmt.Errorf("%s=%q: %s", name, r.getenv(name), fmt.Sprintf(format, args...)))
}

// queueURL refuses name when it is set and not a queue's http(s) URL.
func (r *envReader) queueURL(name string) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		r.bad(name, "want the queue's URL, https://sqs.<region>.amazonaws.com/<account>/<name>")
	}
}

// integer sets *dst to name's value when it is set and an integer from lo
// to hi; otherwise it refuses it with want.
func (r *envReader) integer(name string, dst *int, lo, hi int, want string, args ...any) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.bad(name, want, args...)
		return
	}
	*dst = n
}

// duration sets *dst to name's value when it is set and a Go duration
// from lo to hi; otherwise it refuses it with want.
func (r *envReader) duration(name string, dst *time.Duration, lo, hi time.Duration, want string, args ...any) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		r.bad(name, want, args...)
		return
	}
	*dst = d
}

// ConfigError is an init failure the configuration causes: Variables names
// the variables at fault (none when the cause is not one variable, such as
// the AWS configuration). Its message is Err's.
type ConfigError struct {
	Variables []string
	Err       error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// unique returns names without repeats, in their first order.
func unique(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// configErrorf returns a *ConfigError naming variable, its message
// "configuration: " and the formatted text.
func configErrorf(variable, format string, args ...any) *ConfigError {
	return &ConfigError{Variables: []string{variable}, Err: fmt.Errorf("configuration: "+format, args...)}
}

// NewLogger returns a logger writing JSON lines to w at level.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
