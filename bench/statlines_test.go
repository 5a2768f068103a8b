package bench

import (
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
)

func TestStatLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"overhead, ours", OverheadStatName(Legacy, item.Ours), "BenchmarkOverhead/era=legacy/client=shared-mcp"},
		{"overhead, sdk", OverheadStatName(Stateless, item.SDK), "BenchmarkOverhead/era=stateless/client=go-sdk"},
		{"overhead, traced", OverheadStatName(Stateless, OursTraced), "BenchmarkOverhead/era=stateless/client=shared-mcp-traced"},
		{"rtt, no hint", RTTStatName(20*time.Millisecond, RTTCase{Work: WorkDiscover, Era: Legacy, Client: item.Ours}),
			"BenchmarkRTT/rtt=20ms/work=discover/era=legacy/client=shared-mcp"},
		{"rtt, primed", RTTStatName(100*time.Millisecond, RTTCase{Work: WorkCall, Era: Stateless, Client: item.Ours, Hint: "2026-07-28", Primed: true}),
			"BenchmarkRTT/rtt=100ms/work=call/era=stateless/client=shared-mcp-hint-primed"},
		{"line, median of an even sample is the lower middle", StatLine("BenchmarkX/client=a", []time.Duration{4 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}),
			"BenchmarkX/client=a\t4\t2000000 ns/op"},
		{"line, empty sample", StatLine("BenchmarkX", nil), ""},
		{"ratio", RatioLine("BenchmarkOverheadRatio/era=legacy/client=shared-mcp", 1.18149), "BenchmarkOverheadRatio/era=legacy/client=shared-mcp\t1\t1.1815 ratio"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
