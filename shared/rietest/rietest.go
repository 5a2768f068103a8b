// Package rietest runs Lambda bootstrap binaries under the Runtime
// Interface Emulator for tests (see localstack.Function): StartFunction
// stops the function when the test ends and logs its output when the test
// failed.
package rietest

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// Config, Function and Result are localstack's.
type (
	Config   = localstack.Config
	Function = localstack.Function
	Result   = localstack.Result
)

// TimedOutType is the errorType of an invocation the RIE stopped at the
// function timeout.
const TimedOutType = localstack.TimedOutType

// StartFunction starts cfg under the RIE and stops it in tb.Cleanup; when
// the test failed, the function's output is logged.
func StartFunction(tb testing.TB, cfg Config) *Function {
	tb.Helper()
	f, err := localstack.StartFunction(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := f.Stop(); err != nil {
			tb.Errorf("rietest: %v", err)
		}
		if tb.Failed() {
			tb.Logf("rietest: output of %s:\n%s", f.Name(), strings.Join(f.Logs(), "\n"))
		}
	})
	return f
}
