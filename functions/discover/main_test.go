package main

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestSetup: init builds a runner from a valid environment and fails with
// a message naming each bad variable.
func TestSetup(t *testing.T) { runnertest.CheckSetup(t, setup) }
