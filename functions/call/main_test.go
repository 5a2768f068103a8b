package main

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/work"
)

// TestSetup: init builds a runner from a valid environment and fails with
// a message naming each bad variable.
func TestSetup(t *testing.T) {
	t.Cleanup(func() { guard.SetDefault(nil) })
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(work.EnvCatalogDir, t.TempDir())
	t.Setenv(guard.EnvAllowList, "")
	if r, err := setup(t.Context()); err != nil || r == nil {
		t.Fatalf("setup = %v, %v; want a runner", r, err)
	}

	t.Setenv(work.EnvReserve, "soon")
	t.Setenv(guard.EnvAllowList, "not-a-prefix")
	_, err := setup(t.Context())
	if err == nil || !strings.Contains(err.Error(), work.EnvReserve) {
		t.Errorf("setup error = %v, want it to name %s", err, work.EnvReserve)
	}
	t.Setenv(work.EnvReserve, "")
	if _, err := setup(t.Context()); err == nil || !strings.Contains(err.Error(), guard.EnvAllowList) {
		t.Errorf("setup error = %v, want it to name %s", err, guard.EnvAllowList)
	}
}
