package policy_test

import (
	"os"
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }
