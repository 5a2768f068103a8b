package runnertest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

var (
	motoOnce sync.Once
	motoSrv  *awstest.Moto
	motoErr  error
)

// SharedMoto returns the test binary's moto server, started on first use
// and stopped by Main. A server that does not start fails tb.
func SharedMoto(tb testing.TB) *awstest.Moto {
	tb.Helper()
	motoOnce.Do(func() { motoSrv, motoErr = awstest.Start() })
	if motoErr != nil {
		tb.Fatalf("moto: %v", motoErr)
	}
	return motoSrv
}

// Main runs m's tests, stops the server SharedMoto started, if any, and
// returns m's exit code: TestMain is os.Exit(runnertest.Main(m)). A failure
// to stop is printed to stderr.
func Main(m *testing.M) int {
	code := m.Run()
	if motoSrv != nil {
		if err := motoSrv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}
