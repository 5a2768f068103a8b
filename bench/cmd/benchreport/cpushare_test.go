package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseListLines(t *testing.T) {
	got, err := parseListLines("list 170000000 600000000\nlist 77000000 300000000\n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{170 * time.Millisecond, 77 * time.Millisecond}, got); diff != "" {
		t.Errorf("parseListLines (-want +got):\n%s", diff)
	}
	for name, out := range map[string]string{
		"one listing":  "list 1 2\n",
		"nothing":      "",
		"another line": "list 1 2\nheap 3\n",
		"not a number": "list 1 2\nlist x 2\n",
	} {
		if _, err := parseListLines(out); err == nil {
			t.Errorf("%s: parseListLines(%q) = nil error", name, out)
		}
	}
}

func TestSingleVerdict(t *testing.T) {
	raw := rawListing{mb: 512, tools: 1000, runs: 5, first: 200 * time.Millisecond, warm: 100 * time.Millisecond}
	for _, c := range []struct {
		name, delivery, outcome string
		cpu                     time.Duration
		want                    verdict
	}{
		{"new at 3×", "new", "1 succeeded", 600 * time.Millisecond, met}, // the boundary is met
		{"new past 3×", "new", "1 succeeded", 610 * time.Millisecond, notMet},
		{"unchanged at 1.5×", "unchanged", "1 succeeded", 150 * time.Millisecond, met},
		{"unchanged past 1.5×", "unchanged", "1 succeeded", 160 * time.Millisecond, notMet},
		{"cheap but requeued", "new", "1 requeued", 10 * time.Millisecond, notMet},
	} {
		got := singleVerdict("x", c.delivery, cpuRun{cpu: c.cpu, outcome: c.outcome}, raw)
		if got.met != c.want {
			t.Errorf("%s: verdict %s, want %s (%s)", c.name, got.met, c.want, got.measured)
		}
	}
	if got := cpuVerdict("x", time.Second, 0, 3, ""); got.met != notMet {
		t.Errorf("without an anchor: verdict %s, want not met", got.met)
	}
}
