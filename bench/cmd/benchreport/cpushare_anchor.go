package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/bench/item"
)

// rawListing is the raw go-sdk client's CPU time listing a server, the
// anchor of §10's CPU targets: the median over processes of each one's
// first listing (a fresh process, as a new discovery on an instance that
// has listed nothing) and second listing (warm, as an unchanged
// re-discovery).
type rawListing struct {
	mb, tools   int
	runs        int
	first, warm time.Duration
}

func (r rawListing) String() string {
	return fmt.Sprintf("raw go-sdk listing of %d tools: %s CPU first in a process, %s warm (medians of %d processes)", r.tools, ms(r.first), ms(r.warm), r.runs)
}

// measureRawListing runs bench/cmd/listchild runs times, one process after
// another, each held to share of one core from its exec and listing tools
// distinct-schema tools (bench.DistinctSchemaHandler, the servers of the
// section) twice.
func measureRawListing(ctx context.Context, e *env, mb, tools, runs int) (rawListing, error) {
	r := rawListing{mb: mb, tools: tools, runs: runs}
	child, err := e.buildTool(ctx, "./bench/cmd/listchild")
	if err != nil {
		return r, err
	}
	srv := httptest.NewServer(bench.DistinctSchemaHandler(bench.FormatJSON, tools))
	defer srv.Close()
	cg, err := bench.NewCPUCgroup(fmt.Sprintf("mcpfn-bench-raw-%d-%d", mb, time.Now().UnixNano()), float64(mb)/bench.MBPerVCPU)
	if err != nil {
		return r, err
	}
	defer func() { _ = cg.Remove() }()
	var first, warm []time.Duration
	for range runs {
		out, err := cg.Command(ctx, child, "-client", string(item.SDK), "-url", srv.URL+"/mcp", "-n", "2", "-tools", strconv.Itoa(tools)).Output()
		if err != nil {
			return r, fmt.Errorf("listchild: %w: %s", err, stderrOf(err))
		}
		cpu, err := parseListLines(string(out))
		if err != nil {
			return r, err
		}
		first, warm = append(first, cpu[0]), append(warm, cpu[1])
	}
	r.first, r.warm = bench.Summarize(first).Median, bench.Summarize(warm).Median
	return r, nil
}

// parseListLines reads listchild's "list CPU_NS WALL_NS" lines: the CPU
// time of each listing, two or more.
func parseListLines(out string) ([]time.Duration, error) {
	var cpu []time.Duration
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "list" {
			return nil, fmt.Errorf("listchild printed %q, want list CPU_NS WALL_NS", line)
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("listchild printed %q: %w", line, err)
		}
		cpu = append(cpu, time.Duration(n))
	}
	if len(cpu) < 2 {
		return nil, fmt.Errorf("listchild printed %d listings, want 2", len(cpu))
	}
	return cpu, nil
}

// cpuVerdict is a summary row judging ours against limit times the raw
// SDK's listing CPU raw.
func cpuVerdict(what string, ours, raw time.Duration, limit float64, anchor string) summary {
	ratio := bench.Ratio(ours, raw)
	return summary{
		what:     what + ": CPU, ours ÷ the raw SDK's listing",
		target:   fmt.Sprintf("≤ %g × the raw SDK's listing CPU", limit),
		measured: fmt.Sprintf("%.2f× (%s vs %s, %s)", ratio, ms(ours), ms(raw), anchor),
		met:      verdictOf(raw > 0 && ratio <= limit),
	}
}

// stderrOf is the standard error an exec.Cmd.Output error kept, on one line.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return oneLine(string(ee.Stderr), 300)
	}
	return ""
}

// The anchors' sizes and the targets of issue 27.
const (
	rawListingRuns    = 5    // listchild processes per anchor
	singleMB          = 512  // the single discoveries' MemorySize
	singleAnchorTools = 1000 // the single discovery judged against its anchor
	newLimit          = 3.0  // new catalog: ≤ 3 × the raw listing's CPU
	unchangedLimit    = 1.5  // unchanged re-discovery: ≤ 1.5 ×
)

// singleVerdict judges a single discovery's CPU: a new catalog against the
// raw SDK's first listing in a process, an unchanged one against its warm
// listing. A discovery that did not succeed is not met.
func singleVerdict(what, delivery string, r cpuRun, raw rawListing) summary {
	anchor, limit := raw.first, newLimit
	if delivery == "unchanged" {
		anchor, limit = raw.warm, unchangedLimit
	}
	v := cpuVerdict(what+", "+r.outcome, r.cpu, anchor, limit, raw.String())
	if r.outcome != "1 succeeded" {
		v.met = notMet
	}
	return v
}

// rawListingTable is the section's table of the anchors measured.
func rawListingTable(raws []rawListing) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe anchor: the raw go-sdk client (bench/item, as §1 uses it) listing the same distinct-schema server in `bench/cmd/listchild`, "+
		"a process held to the same share from its exec (a shell joins the cgroup and execs it). Each process connects, lists and closes twice; "+
		"CPU is its own user + system time over each listing (getrusage), so its start-up is not counted, as the warm-up record keeps the "+
		"bootstrap's init out of the single discoveries. A new discovery is judged against the first listing in a process, an unchanged one "+
		"against the second. Medians of %d processes.\n\n", rawListingRuns)
	b.WriteString("| MemorySize | CPU share | tools | raw listing CPU, first in process | raw listing CPU, warm | command |\n|---|---|---|---|---|---|\n")
	for _, r := range raws {
		fmt.Fprintf(&b, "| %d MB | %.2f | %d | %s | %s | %s |\n", r.mb, float64(r.mb)/bench.MBPerVCPU, r.tools, ms(r.first), ms(r.warm), command("cpushare"))
	}
	b.WriteString("\n")
	return b.String()
}
