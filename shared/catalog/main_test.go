package catalog_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

// moto is the package's one server; each test makes its own table.
var moto *awstest.Moto

func TestMain(m *testing.M) {
	var err error
	if moto, err = awstest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "catalog tests need moto:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := moto.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
