package template

import (
	"math"
	"testing"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// sqsDefaultBatchSize is the BatchSize of an SQS event without one (SAM and
// Lambda's default).
const sqsDefaultBatchSize = 10

// slotsAt is how many work items fit at once at a MemorySize of mb: the
// runner's slot formula over startup's memory budget, with no concurrency cap.
func slotsAt(mb float64) int {
	return runner.SlotCount(math.MaxInt, startup.PlanMemory(int(mb)).Budget, runner.ItemBytes)
}

// TestDefaultBatchFitsTheMemory pins the sizing at the template's defaults:
// each function a queue feeds has, at its default MemorySize, a work slot
// (startup.PlanMemory, the one formula) for every record of a default batch,
// and a default MCPFN_BATCH_CONCURRENCY that runs them all at once. A record
// without a slot may come back not_started, spending one of its receives.
func TestDefaultBatchFitsTheMemory(t *testing.T) {
	d := realTemplate(t)
	queued := 0
	for name, fn := range d.resources("AWS::Serverless::Function") {
		events, _ := path(fn, "Properties", "Events").(map[string]any)
		for evName, ev := range events {
			if path(ev, "Type") != "SQS" {
				continue
			}
			queued++
			batch := float64(sqsDefaultBatchSize)
			if v := path(ev, "Properties", "BatchSize"); v != nil {
				var err error
				if batch, err = d.number(v, atDefault); err != nil {
					t.Fatalf("%s.%s BatchSize: %v", name, evName, err)
				}
			}
			mb, err := d.number(d.functionProp(fn, "MemorySize"), atDefault)
			if err != nil {
				t.Fatalf("%s MemorySize: %v", name, err)
			}
			if slots := slotsAt(mb); float64(slots) < batch {
				t.Errorf("%s: MemorySize %v MB gives %d slots for a default batch of %v records (docs/operations.md, sizing)", name, mb, slots, batch)
			}
			conc, err := d.number(d.functionProp(fn, "Environment", "Variables", startup.EnvBatchConcurrency), atDefault)
			if err != nil {
				t.Fatalf("%s %s: %v", name, startup.EnvBatchConcurrency, err)
			}
			if conc < batch {
				t.Errorf("%s: %s %v runs fewer than a default batch of %v records at once", name, startup.EnvBatchConcurrency, conc, batch)
			}
		}
	}
	if queued == 0 {
		t.Fatal("no function has an SQS event")
	}
}
