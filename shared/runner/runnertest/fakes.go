package runnertest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// Fakes surrounds a function's handler with fakes: secrets in memory,
// recording Step Functions and SQS, and logs and metrics collected as JSON
// lines. Start builds Runner; Invoke runs payloads through it.
type Fakes struct {
	RequestID string // the Lambda request id of every invocation
	Secrets   *vaulttest.Secrets
	Tasks     *Tasks
	Queue     *Queue
	Logs      *Lines
	Metrics   *Lines
	Logger    *slog.Logger // writes to Logs
	Runner    *runner.Runner
}

// NewFakes returns empty fakes whose invocations carry requestID.
func NewFakes(requestID string) *Fakes {
	f := &Fakes{
		RequestID: requestID,
		Secrets:   &vaulttest.Secrets{},
		Tasks:     &Tasks{},
		Queue:     &Queue{},
		Logs:      &Lines{},
		Metrics:   &Lines{},
	}
	f.Logger = slog.New(slog.NewJSONHandler(f.Logs, nil))
	return f
}

// Start builds Runner over p from cfg with the fakes' queue, Step
// Functions, logger and metrics.
func (f *Fakes) Start(tb testing.TB, cfg runner.Config, p runner.Processor) {
	tb.Helper()
	cfg.Queue, cfg.Tasks, cfg.Logger, cfg.Metrics = f.Queue, f.Tasks, f.Logger, f.Metrics
	var err error
	if f.Runner, err = runner.NewRunner(cfg, p); err != nil {
		tb.Fatal(err)
	}
}

// Invoke runs payload through Runner with RequestID and a minute to the
// deadline, and returns what it produced (see Invoke).
func (f *Fakes) Invoke(tb testing.TB, payload []byte) Invocation {
	tb.Helper()
	ctx, cancel := Context(tb.Context(), f.RequestID, time.Minute)
	defer cancel()
	return Invoke(ctx, f.Runner.Handle, payload, f.Tasks, f.Queue, f.Logs)
}

// Connector is a fake connect function (a handler's Connect field): Connect records each
// configuration and returns Conn, or Err when set. Set Conn and Err before
// connecting; the rest is safe for concurrent use.
type Connector[C any] struct {
	Conn C
	Err  error

	mu      sync.Mutex
	configs []mcp.Config
}

// Connect records cfg and returns Conn, or C's zero value and Err.
func (c *Connector[C]) Connect(_ context.Context, cfg mcp.Config) (C, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs = append(c.configs, cfg)
	if c.Err != nil {
		var zero C
		return zero, c.Err
	}
	return c.Conn, nil
}

// Configs returns the configurations Connect was called with, in order.
func (c *Connector[C]) Configs() []mcp.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.configs)
}

// Request returns defaults with changes applied, as a JSON payload: a nil
// value in changes removes the field. defaults is not modified.
func Request(defaults, changes map[string]any) []byte {
	r := make(map[string]any, len(defaults)+len(changes))
	for k, v := range defaults {
		r[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(r, k)
			continue
		}
		r[k] = v
	}
	return Payload(r)
}
