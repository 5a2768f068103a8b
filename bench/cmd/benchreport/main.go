// Command benchreport runs every measurement of issue 8 against its anchor
// and rewrites docs/benchmarks.md. Run it from the module root (make bench
// does). With -only it runs the named sections and prints their summary
// rows and tables instead of writing the document.
//
// Usage: go run ./bench/cmd/benchreport [-o docs/benchmarks.md] [-only overhead,store]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
)

// serveFixtures is the hidden flag of the fixture child (bench.StartFixtures).
const serveFixtures = "serve-fixtures"

type options struct {
	items         int
	warmup        int
	coldStarts    int
	overshootReps int
	rttItems      []int // by bench.RTTs
	rssCap        int64
	attackTimeout time.Duration
}

func main() {
	out := flag.String("o", "docs/benchmarks.md", "document to rewrite")
	only := flag.String("only", "", "comma-separated sections to run and print: "+strings.Join(sectionIDs(), ","))
	var o options
	flag.IntVar(&o.items, "items", 300, "timed work items per era and client (overhead)")
	flag.IntVar(&o.warmup, "warmup", 20, "untimed work items per era and client before timing")
	flag.IntVar(&o.coldStarts, "coldstarts", 20, "cold starts per function")
	o.rttItems = []int{20, 8}
	flag.Func("rtt-items", "timed work items per case at each of the RTTs 20 ms and 100 ms (rtt; default 20,8)", func(v string) error {
		n, err := parseCounts(v, len(bench.RTTs))
		o.rttItems = n
		return err
	})
	flag.IntVar(&o.overshootReps, "overshoot-reps", 3, "repetitions per operation and client (overshoot)")
	rssCapGiB := flag.Float64("rss-cap", 8, "GiB of RSS at which a memory child is killed")
	flag.DurationVar(&o.attackTimeout, "attack-timeout", 2*time.Minute, "time after which a memory child is killed")
	fixtures := flag.Bool(serveFixtures, false, "serve the fixture servers until stdin closes (internal)")
	flag.Parse()
	o.rssCap = int64(*rssCapGiB * (1 << 30))

	if *fixtures {
		if err := bench.ServeFixturesUntilEOF(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *only, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(out, only string, o options) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run from the module root (the directory of go.mod)")
	}
	selected := sections
	if only != "" {
		selected = nil
		for _, id := range strings.Split(only, ",") {
			i := slices.IndexFunc(sections, func(s section) bool { return s.id == id })
			if i < 0 {
				return fmt.Errorf("unknown section %q; have %s", id, strings.Join(sectionIDs(), ", "))
			}
			selected = append(selected, sections[i])
		}
	}
	tmp, err := os.MkdirTemp("", "mcpfn-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := &env{opts: o, tmp: tmp, built: map[string]string{}}

	ctx := context.Background()
	start := time.Now()
	var results []result
	var failed []string
	for _, s := range selected {
		fmt.Fprintf(os.Stderr, "benchreport: %s ...\n", s.id)
		t := time.Now()
		r, err := s.run(ctx, e)
		r.section, r.took = s, time.Since(t)
		if err != nil {
			r.err = err
			failed = append(failed, s.id)
			fmt.Fprintf(os.Stderr, "benchreport: %s failed: %v\n", s.id, err)
		}
		fmt.Fprintf(os.Stderr, "benchreport: %s took %s\n", s.id, r.took.Round(100*time.Millisecond))
		results = append(results, r)
	}
	total := time.Since(start)

	if only != "" {
		fmt.Print(summaryTable(results))
		for _, r := range results {
			fmt.Print(r.markdown())
		}
	} else {
		doc := document(bench.ThisMachine(), start, total, results)
		if err := writeFile(out, doc); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "benchreport: wrote %s in %s\n", out, total.Round(time.Second))
	}
	if len(failed) > 0 {
		return fmt.Errorf("sections failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// parseCounts parses want comma-separated positive counts.
func parseCounts(v string, want int) ([]int, error) {
	fields := strings.Split(v, ",")
	if len(fields) != want {
		return nil, fmt.Errorf("%q: want %d comma-separated counts", v, want)
	}
	out := make([]int, want)
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: %q is not a positive count", v, f)
		}
		out[i] = n
	}
	return out, nil
}

// env is what sections share: options, a scratch directory, and binaries
// built once.
type env struct {
	opts  options
	tmp   string
	built map[string]string // "pkg goarch" → path
}

// build compiles pkg for linux/goarch with the deployment flags, once.
func (e *env) build(ctx context.Context, pkg, goarch string) (string, int64, error) {
	key := pkg + " " + goarch
	if p, ok := e.built[key]; ok {
		st, err := os.Stat(p)
		if err != nil {
			return "", 0, err
		}
		return p, st.Size(), nil
	}
	dir := filepath.Join(e.tmp, goarch, filepath.Base(pkg))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	p := filepath.Join(dir, "bootstrap")
	size, err := bench.BuildBootstrap(ctx, pkg, goarch, p)
	if err != nil {
		return "", 0, err
	}
	e.built[key] = p
	return p, size, nil
}

// buildTool compiles a helper program for this machine, once.
func (e *env) buildTool(ctx context.Context, pkg string) (string, error) {
	key := pkg + " tool"
	if p, ok := e.built[key]; ok {
		return p, nil
	}
	p := filepath.Join(e.tmp, "tools", filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	e.built[key] = p
	return p, nil
}

// writeFile replaces path atomically.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
