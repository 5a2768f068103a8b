package bench

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReportDurations: each REPORT line gives its Duration, not the Init
// or Billed one; Init Durations add up; other lines are skipped; a REPORT
// line without a Duration is an error.
func TestReportDurations(t *testing.T) {
	logs := []string{
		`{"msg":"work item"}`,
		"REPORT RequestId: a\tInit Duration: 1.50 ms\tDuration: 24.25 ms\tBilled Duration: 25 ms\tMemory Size: 3008 MB",
		"REPORT RequestId: b  Duration: 3.00 ms  Billed Duration: 3 ms",
	}
	durs, init, err := reportDurations(logs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{24250 * time.Microsecond, 3 * time.Millisecond}, durs); diff != "" || init != 1500*time.Microsecond {
		t.Errorf("durations (-want +got):\n%s\ninit %s, want 1.5ms", diff, init)
	}
	if got := (LongCallCost{Durations: durs, Init: init}).BilledMs(); got != 25+3+2 {
		t.Errorf("BilledMs = %d, want 30 (25 + 3 + init 2)", got)
	}
	if _, _, err := reportDurations([]string{"REPORT RequestId: c Billed Duration: 3 ms"}); err == nil {
		t.Error("a REPORT line without a Duration: no error")
	}
}
