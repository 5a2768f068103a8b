// Command benchruns repeats the overhead measurement (docs/benchmarks.md
// section 1) and the discover items at one round-trip time (section 9)
// -runs times, alternating the two, and writes each run's median per case
// as Go benchmark lines, so that benchstat can tell a ratio from the noise
// across runs. Run it from the module root.
//
// Usage: go run ./bench/cmd/benchruns [-runs 10] [-o DIR]
//
// then, with the commands it prints:
//
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /client DIR/overhead.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /client DIR/rtt.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da DIR/ratios.txt
//
// overhead.txt and rtt.txt hold each run's median item time per case;
// ratios.txt each run's ratio of medians against the raw SDK, the items of
// a run being interleaved, so its median over runs is the figure the
// targets bound.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/bench/item"
)

// serveFixtures is the hidden flag of the fixture child (bench.StartFixtures).
const serveFixtures = "serve-fixtures"

// benchstat is the benchstat the printed commands run.
const benchstat = "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"

type options struct {
	runs, items, warmup, rttItems int
	ratios                        io.Writer
	rtt                           time.Duration
	work                          string
	dir                           string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 10, "runs of each measurement")
	flag.IntVar(&o.items, "items", 300, "timed overhead items per era and client in a run")
	flag.IntVar(&o.warmup, "warmup", 20, "untimed overhead items per era and client before a run's timed ones")
	flag.IntVar(&o.rttItems, "rtt-items", 20, "timed RTT items per case in a run")
	flag.DurationVar(&o.rtt, "rtt", bench.RTTs[0], "round-trip time of the RTT measurement")
	flag.StringVar(&o.work, "work", bench.WorkDiscover, "RTT work item: "+bench.WorkDiscover+" or "+bench.WorkCall)
	flag.StringVar(&o.dir, "o", filepath.Join(os.TempDir(), "mcpfn-benchruns"), "directory for overhead.txt and rtt.txt")
	fixtures := flag.Bool(serveFixtures, false, "serve the fixture servers until stdin closes (internal)")
	flag.Parse()

	if *fixtures {
		if err := bench.ServeFixturesUntilEOF(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "benchruns:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchruns:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if !slices.Contains(bench.Works, o.work) {
		return fmt.Errorf("unknown -work %q", o.work)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	overheadOut, err := os.Create(filepath.Join(o.dir, "overhead.txt"))
	if err != nil {
		return err
	}
	defer overheadOut.Close()
	rttOut, err := os.Create(filepath.Join(o.dir, "rtt.txt"))
	if err != nil {
		return err
	}
	defer rttOut.Close()
	ratioOut, err := os.Create(filepath.Join(o.dir, "ratios.txt"))
	if err != nil {
		return err
	}
	defer ratioOut.Close()
	o.ratios = ratioOut

	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-"+serveFixtures)
	cmd.Stderr = os.Stderr
	fx, err := bench.StartFixtures(cmd)
	if err != nil {
		return err
	}
	defer fx.Stop()

	var cases []bench.RTTCase
	for _, c := range bench.RTTCases() {
		if c.Work == o.work && !c.Primed {
			cases = append(cases, c)
		}
	}
	ctx := context.Background()
	for i := range o.runs {
		steps := []func() error{
			func() error { return overhead(ctx, fx.URL, o, overheadOut) },
			func() error { return rtt(ctx, fx.URL, o, cases, rttOut) },
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		start := time.Now()
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("run %d: %w", i+1, err)
			}
		}
		fmt.Fprintf(os.Stderr, "benchruns: run %d of %d took %s\n", i+1, o.runs, time.Since(start).Round(time.Second))
	}
	fmt.Printf("go run %s -col /client %s\n", benchstat, overheadOut.Name())
	fmt.Printf("go run %s -col /client %s\n", benchstat, rttOut.Name())
	fmt.Printf("go run %s %s\n", benchstat, ratioOut.Name())
	return nil
}

// overhead runs the overhead measurement once and writes a line per era
// and client, the raw SDK first (benchstat's baseline column), and the
// run's ratio of medians, ours ÷ go-sdk, per era and client.
func overhead(ctx context.Context, urls map[string]string, o options, w io.Writer) error {
	s, err := bench.Overhead(ctx, urls, o.items, o.warmup)
	if err != nil {
		return err
	}
	for _, era := range bench.Eras {
		for _, c := range []item.Client{item.SDK, item.Ours, bench.OursTraced} {
			if err := writeLine(w, bench.OverheadStatName(era, c), s[era][c]); err != nil {
				return err
			}
			if c != item.SDK {
				r := bench.Ratio(bench.Summarize(s[era][c]).Median, bench.Summarize(s[era][item.SDK]).Median)
				name := "BenchmarkOverheadRatio/era=" + era + "/client=" + bench.StatClient(c)
				if _, err := fmt.Fprintln(o.ratios, bench.RatioLine(name, r)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// rtt runs the RTT measurement of cases once and writes a line per case,
// in RTTCases' order (the raw SDK first in each era), and the run's ratio
// of medians against the raw SDK of the same era for each other case.
func rtt(ctx context.Context, urls map[string]string, o options, cases []bench.RTTCase, w io.Writer) error {
	samples, err := bench.RTTRunCases(ctx, urls, o.rtt, cases, o.rttItems, 1)
	if err != nil {
		return err
	}
	for _, s := range samples {
		if s.Failed > 0 {
			return fmt.Errorf("%s: %d items failed: %w", bench.RTTStatName(o.rtt, s.Case), s.Failed, s.Err)
		}
		if err := writeLine(w, bench.RTTStatName(o.rtt, s.Case), s.Times); err != nil {
			return err
		}
	}
	for _, s := range samples {
		if s.Case.Client == item.SDK {
			continue
		}
		i := slices.IndexFunc(samples, func(a bench.RTTSample) bool {
			return a.Case == bench.RTTCase{Work: s.Case.Work, Era: s.Case.Era, Client: item.SDK}
		})
		if i < 0 {
			continue
		}
		r := bench.Ratio(bench.Summarize(s.Times).Median, bench.Summarize(samples[i].Times).Median)
		name := strings.Replace(bench.RTTStatName(o.rtt, s.Case), "BenchmarkRTT/", "BenchmarkRTTRatio/", 1)
		if _, err := fmt.Fprintln(o.ratios, bench.RatioLine(name, r)); err != nil {
			return err
		}
	}
	return nil
}

func writeLine(w io.Writer, name string, d []time.Duration) error {
	_, err := fmt.Fprintln(w, bench.StatLine(name, d))
	return err
}
