// Package awstest gives tests a local moto server (see localstack.Moto):
// one per test (StartMoto) or one per test binary shared by its tests
// (SharedMoto, with Main and UniqueName).
package awstest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// Region, AccessKeyID and SecretAccessKey are the static settings every
// client of a Moto server uses.
const (
	Region          = localstack.Region
	AccessKeyID     = localstack.AccessKeyID
	SecretAccessKey = localstack.SecretAccessKey
)

// Moto is one running moto server.
type Moto = localstack.Moto

// StartMoto starts a moto server and stops it in tb.Cleanup. A missing
// interpreter or moto module fails the test.
func StartMoto(tb testing.TB) *Moto {
	tb.Helper()
	m, err := localstack.StartMoto()
	if err != nil {
		tb.Fatalf("awstest: %v", err)
	}
	tb.Cleanup(func() {
		if err := m.Stop(); err != nil {
			tb.Errorf("awstest: %v", err)
		}
	})
	return m
}

var (
	sharedOnce sync.Once
	shared     *Moto
	sharedErr  error
)

// SharedMoto returns the test binary's one moto server, started on first
// use and stopped by Main. Tests sharing it keep apart by giving what they
// create a UniqueName. A server that does not start fails every tb that
// asks for it, with the same error.
func SharedMoto(tb testing.TB) *Moto {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = localstack.StartMoto() })
	if sharedErr != nil {
		tb.Fatalf("awstest: %v", sharedErr)
	}
	return shared
}

// Main runs m's tests, stops the server SharedMoto started, if any, and
// returns m's exit code: TestMain is os.Exit(awstest.Main(m)). A failure
// to stop is printed to stderr.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}

// UniqueName is localstack.UniqueName.
func UniqueName(prefix string) string { return localstack.UniqueName(prefix) }

// NewTable is localstack.NewTable; an error fails tb.
func NewTable[API any](tb testing.TB, m *Moto, prefix string, create func(context.Context, API, string) error) (*dynamodb.Client, string) {
	tb.Helper()
	client, name, err := localstack.NewTable(context.Background(), m, prefix, create)
	if err != nil {
		tb.Fatalf("awstest: %v", err)
	}
	return client, name
}
