package catalog_test

import (
	"os"
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

// The Dynamo tests share the binary's moto server, each in its own table.
func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }
