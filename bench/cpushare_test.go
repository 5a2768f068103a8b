package bench

import (
	"os"
	"testing"

	"github.com/mcpfn/mcpfn/shared/schema"
)

func TestDistinctSchemasAreValidDistinctAndFitTheBudget(t *testing.T) {
	seen := map[string]bool{}
	total := 0
	for i := range NearLimitTools {
		s := DistinctSchema(i)
		if err := schema.Check(s); err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		if seen[string(s)] {
			t.Fatalf("schema %d repeats another", i)
		}
		seen[string(s)] = true
		total += len(s)
	}
	if total > NearLimitListBytes {
		t.Errorf("the schemas take %d bytes, over a near-limit listing's %d", total, NearLimitListBytes)
	}
}

func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil || after <= before || x == 0 {
		t.Errorf("ProcessCPU = %s then %s (%v), want it to grow with a busy loop", before, after, err)
	}
}
