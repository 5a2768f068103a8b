package runner_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
)

func TestEmitCounts(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	runner.EmitCounts(&buf, "discover", at, map[string]int{"SweepEnqueued": 3, "SweepDue": 4})
	runner.EmitCounts(&buf, "discover", at, nil) // nothing to write
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
	}
	want := map[string]any{
		"_aws": map[string]any{
			"Timestamp": float64(at.UnixMilli()),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "mcpfn",
				"Dimensions": []any{[]any{"Function"}},
				"Metrics": []any{
					map[string]any{"Name": "SweepDue", "Unit": "Count"},
					map[string]any{"Name": "SweepEnqueued", "Unit": "Count"},
				},
			}},
		},
		"Function":      "discover",
		"SweepDue":      float64(4),
		"SweepEnqueued": float64(3),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EMF line (-want +got):\n%s", diff)
	}
}
