package catalog_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

func TestDynamoSuite(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, func(t *testing.T) catalogtest.Store {
		return catalogtest.NewDynamo(t, awstest.SharedMoto(t))
	})
}

func TestDirSuite(t *testing.T) {
	t.Parallel()
	catalogtest.Run(t, newDir)
}

// TestDynamoBig runs on a server of its own: moto answers one request at a
// time, and pages through a 10,000-item partition slowly.
func TestDynamoBig(t *testing.T) {
	t.Parallel()
	catalogtest.Big(t, catalogtest.NewDynamo(t, awstest.StartMoto(t)))
}

func TestDirBig(t *testing.T) {
	t.Parallel()
	catalogtest.Big(t, newDir(t))
}

func newDir(t *testing.T) catalogtest.Store {
	s, err := catalog.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
