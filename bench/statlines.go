package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
)

// StatClient is a client's name in benchstat lines: no '/' or space, so
// that `benchstat -col /client` can compare the clients.
func StatClient(c item.Client) string {
	switch c {
	case item.Ours:
		return "shared-mcp"
	case item.SDK:
		return "go-sdk"
	case OursTraced:
		return "shared-mcp-traced"
	}
	return strings.NewReplacer("/", "-", " ", "-", ",", "").Replace(string(c))
}

// OverheadStatName names an overhead sample of era and c in benchstat
// lines: BenchmarkOverhead/era=ERA/client=CLIENT.
func OverheadStatName(era string, c item.Client) string {
	return "BenchmarkOverhead/era=" + era + "/client=" + StatClient(c)
}

// RTTStatName names an RTT sample in benchstat lines:
// BenchmarkRTT/rtt=RTT/work=WORK/era=ERA/client=CLIENT, the client
// suffixed -hint and -primed as the case is.
func RTTStatName(rtt time.Duration, c RTTCase) string {
	client := StatClient(c.Client)
	if c.Hint != "" {
		client += "-hint"
	}
	if c.Primed {
		client += "-primed"
	}
	return fmt.Sprintf("BenchmarkRTT/rtt=%s/work=%s/era=%s/client=%s", rtt, c.Work, c.Era, client)
}

// StatLine is one line of Go benchmark output for a sample of item times,
// as benchstat reads it: name, the sample's size, and its median in ns/op.
// One run of a measurement gives one line per case, so benchstat's
// statistics are over runs. It is "" for an empty sample.
func StatLine(name string, d []time.Duration) string {
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprintf("%s\t%d\t%d ns/op", name, len(d), Summarize(d).Median.Nanoseconds())
}

// RatioLine is a benchmark line for one run's ratio of medians: name, and
// r in the unit "ratio", so that benchstat gives its median over runs with
// a confidence interval.
func RatioLine(name string, r float64) string {
	return fmt.Sprintf("%s\t1\t%.4f ratio", name, r)
}
