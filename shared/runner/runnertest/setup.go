package runnertest

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// CheckSetup checks a function's init, setup: from a valid environment
// (a catalog directory, no allow-list) it builds a runner; a bad setting
// fails it with an error naming the variable, before a bad allow-list is
// looked at; a bad allow-list alone fails it naming guard.EnvAllowList.
func CheckSetup(t *testing.T, setup func(context.Context) (*runner.Runner, error)) {
	t.Helper()
	t.Cleanup(func() { guard.SetDefault(nil) })
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(startup.EnvCatalogDir, t.TempDir())
	t.Setenv(guard.EnvAllowList, "")
	if r, err := setup(t.Context()); err != nil || r == nil {
		t.Fatalf("setup = %v, %v; want a runner", r, err)
	}

	t.Setenv(startup.EnvReserve, "soon")
	t.Setenv(guard.EnvAllowList, "not-a-prefix")
	_, err := setup(t.Context())
	if err == nil || !strings.Contains(err.Error(), startup.EnvReserve) {
		t.Errorf("setup error = %v, want it to name %s", err, startup.EnvReserve)
	}
	t.Setenv(startup.EnvReserve, "")
	if _, err := setup(t.Context()); err == nil || !strings.Contains(err.Error(), guard.EnvAllowList) {
		t.Errorf("setup error = %v, want it to name %s", err, guard.EnvAllowList)
	}
}
