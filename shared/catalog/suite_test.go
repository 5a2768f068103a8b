package catalog_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

func TestDynamoSuite(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalogtest.Store {
		return catalogtest.NewDynamo(t, moto)
	})
}

func TestDirSuite(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalogtest.Store {
		s, err := catalog.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
