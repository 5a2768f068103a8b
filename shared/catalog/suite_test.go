package catalog_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

func TestDynamoSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, func(t *testing.T) catalogtest.Store {
		return catalogtest.NewDynamo(t, awstest.SharedMoto(t))
	})
}

func TestDirSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, newDir)
}

// TestDynamoBig runs on a server of its own: moto answers one request at a
// time, and pages through a 10,000-item partition slowly.
func TestDynamoBig(t *testing.T) {
	t.Parallel()
	testBig(t, catalogtest.NewDynamo(t, awstest.StartMoto(t)))
}

func TestDirBig(t *testing.T) {
	t.Parallel()
	testBig(t, newDir(t))
}

func newDir(t *testing.T) catalogtest.Store {
	s, err := catalog.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runSuite runs the behavioural tests every catalog store passes, but testBig.
// newStore returns an empty store; subtests run in parallel.
func runSuite(t *testing.T, newStore func(t *testing.T) catalogtest.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, catalogtest.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Empty", testEmpty},
		{"Replace", testReplace},
		{"Unchanged", testUnchanged},
		{"OlderLoses", testOlderLoses},
		{"SameStart", testSameStart},
		{"Race", testRace},
		{"Oversized", testOversized},
		{"Duplicates", testDuplicates},
		{"Failure", testFailure},
		{"FailureFirst", testFailureFirst},
		{"NotFound", testNotFound},
		{"ReadersSeeWholeVersions", testReaders},
		{"ServerDiscovery", testServerDiscovery},
		{"FullEntries", testFullEntries},
		{"OversizedFields", testOversizedFields},
		{"ModelNames", testModelNames},
		{"ModelNamesStable", testModelNamesStable},
		{"ModelNamesExhausted", testModelNamesExhausted},
		{"Changes", testChanges},
		{"ChangesRace", testChangesRace},
		{"ChangesBound", testChangesBound},
		{"LookupHints", testLookupHints},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// assertLookup checks Lookup(id, name); a want that is Found without a
// Name means name itself.
func assertLookup(t *testing.T, s catalogtest.Store, id, name string, want catalog.Membership) {
	t.Helper()
	want = catalogtest.LookupWant(name, want)
	got, err := s.Lookup(context.Background(), id, name)
	if err != nil {
		t.Fatalf("Lookup(%q, %q): %v", id, name, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lookup(%q) (-want +got):\n%s", name, diff)
	}
}
