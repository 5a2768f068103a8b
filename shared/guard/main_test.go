package guard_test

import (
	"fmt"
	"os"
	"testing"
)

// envProxy listens where every proxy variable points for the whole test
// binary. net/http reads the proxy environment once per process, so the
// variables are set here, before any test can trigger that read, rather
// than with t.Setenv in one test.
var envProxy *acceptCounter

func TestMain(m *testing.M) {
	var err error
	envProxy, err = startCounting("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"} {
		os.Setenv(k, "http://"+envProxy.addr())
	}
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")

	code := m.Run()
	if got, err := envProxy.flush(); err != nil || len(got) > 0 {
		fmt.Fprintf(os.Stderr, "proxy listener received %v (%v)\n", got, err)
		code = 1
	}
	envProxy.stop()
	os.Exit(code)
}
