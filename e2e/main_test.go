// Package e2e runs the real discover and call binaries under the Lambda
// Runtime Interface Emulator against moto (DynamoDB, SQS, Secrets Manager),
// a recording Step Functions endpoint and real MCP servers on loopback, and
// runs the state machines in aws-local-stepfunctions with their Task states
// invoking those binaries.
//
// The binaries, moto and the RIE are required: a missing one fails the run
// with the command that installs it. The state machine tests also need the
// npm pieces; plain `go test ./...` skips them and `make test-e2e` runs them.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/awstest"
)

// Shared by every test: built once (moto is awstest.SharedMoto).
var (
	bins struct{ discover, call, exampleServer string }
	rie  string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if rie, err = localstack.FindRIE(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "mcpfn-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.discover = filepath.Join(dir, "discover", "bootstrap")
	bins.call = filepath.Join(dir, "call", "bootstrap")
	bins.exampleServer = filepath.Join(dir, "exampleserver")
	for pkg, out := range map[string]string{
		"github.com/mcpfn/mcpfn/functions/discover": bins.discover,
		"github.com/mcpfn/mcpfn/functions/call":     bins.call,
		"github.com/mcpfn/mcpfn/cmd/exampleserver":  bins.exampleServer,
	} {
		if err := localstack.Build(context.Background(), pkg, out); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			return 1
		}
	}
	return awstest.Main(m)
}
