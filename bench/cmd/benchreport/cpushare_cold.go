package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// cpuShareColdStarts is how many cold starts §10 times per function and
// size, round-robin across functions as §5 does.
const cpuShareColdStarts = 7

// cpuShareColdStart times the cold starts of §5 (bench.ColdStart, the
// functions of coldStartFunctions) with the RIE and the bootstrap held to
// each size's CPU share from the RIE's exec.
func cpuShareColdStart(ctx context.Context, e *env) (string, []summary, error) {
	rie, err := localstack.FindRIE()
	if err != nil {
		return "", nil, err
	}
	h, _ := mcptest.NewHandler(bench.FixtureOptions(bench.Stateless))
	srv, err := serveMux(h)
	if err != nil {
		return "", nil, err
	}
	defer srv.Close()
	functions := coldStartFunctions(filepath.Join(e.tmp, "catalog-coldstart-cpu"))
	bins := make([]string, len(functions))
	for i, f := range functions {
		if bins[i], _, err = e.build(ctx, f.pkg, runtime.GOARCH); err != nil {
			return "", nil, err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nCold starts at the CPU share: §5's measurement (exec of `aws-lambda-rie` → the first invocation's answer, then a warm "+
		"invocation; the same work items against a stateless fixture, a directory catalog) with the RIE and the bootstrap in the cgroup "+
		"from the RIE's exec: a shell joins the group first (a move into a cgroup v1 group takes up to tens of ms, which is not timed) "+
		"and then, released, execs the RIE; that release is in every row, the anchor's too. The %s build for this machine, %d runs per function and size, round-robin across functions.\n\n", runtime.GOARCH, cpuShareColdStarts)
	b.WriteString("| MemorySize | CPU share | function | exec → first answer, median | p95 | warm invocation, median | cold − anchor cold (median) | command |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	url := srv.URL + "/mcp"
	for _, mb := range cpuShareSizes {
		share := float64(mb) / bench.MBPerVCPU
		cg, err := bench.NewCPUCgroup(fmt.Sprintf("mcpfn-bench-cold-%d-%d", mb, time.Now().UnixNano()), share)
		if err != nil {
			return b.String(), sum, err
		}
		cold := make([][]time.Duration, len(functions))
		warm := make([][]time.Duration, len(functions))
		for range cpuShareColdStarts {
			for i, f := range functions {
				inv := f.inv(url)
				inv.Bootstrap, inv.Cgroup = bins[i], cg
				c, w, err := bench.ColdStart(ctx, rie, inv)
				if err != nil {
					_ = cg.Remove()
					return b.String(), sum, fmt.Errorf("%s at %d MB: %w", f.name, mb, err)
				}
				cold[i], warm[i] = append(cold[i], c), append(warm[i], w)
			}
		}
		time.Sleep(100 * time.Millisecond)
		_ = cg.Remove()
		anchor := bench.Summarize(cold[0])
		for i, f := range functions {
			c, w := bench.Summarize(cold[i]), bench.Summarize(warm[i])
			diff := "—"
			if i > 0 {
				diff = "+" + ms(c.Median-anchor.Median)
			}
			fmt.Fprintf(&b, "| %d MB | %.2f | %s | %s | %s | %s | %s | %s |\n", mb, share, f.name, ms(c.Median), ms(c.P95), ms(w.Median), diff, command("cpushare"))
			if i > 0 {
				sum = append(sum, summary{
					what:     fmt.Sprintf("%d MB (%.2f vCPU), cold start, %s: exec → first answer (median of %d)", mb, share, f.name, c.N),
					measured: fmt.Sprintf("%s (anchor %s); warm invocation %s", ms(c.Median), ms(anchor.Median), ms(w.Median)),
				})
			}
		}
	}
	b.WriteString("\n")
	return b.String(), sum, nil
}
