package main

// The sections that run the real bootstraps under the RIE: cold starts and
// batches.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

type function struct {
	name, pkg string
	inv       func(url string) bench.Invocation
}

func coldStart(ctx context.Context, e *env) (result, error) {
	rie, err := localstack.FindRIE()
	if err != nil {
		return result{}, err
	}
	h, _ := mcptest.NewHandler(bench.FixtureOptions(bench.Stateless))
	srv, err := serveMux(h)
	if err != nil {
		return result{}, err
	}
	defer srv.Close()
	functions := coldStartFunctions(filepath.Join(e.tmp, "catalog-coldstart"))
	host := runtime.GOARCH
	var b strings.Builder
	fmt.Fprintf(&b, "Sizes: `CGO_ENABLED=0 GOOS=linux GOARCH=<arch> go build %s -o bootstrap <pkg>` (the deployment build of mk/run.mk). "+
		"Cold start: time from exec of `aws-lambda-rie` (both address flags on loopback) serving the %s binary to the answer of the first "+
		"invocation, which the test sends in a loop until the emulator accepts it; warm: the second invocation on the same process. "+
		"%d runs per function, round-robin across functions. The first invocation is a real work item against a local stateless "+
		"go-sdk fixture (discover: list %d tools and store them in a directory catalog; call: `echo`); the anchor answers `{}`.\n\n",
		strings.Join(quoteFlags(bench.BuildFlags), " "), host, e.opts.coldStarts, bench.CatalogTools)
	b.WriteString("| function | bootstrap arm64 | bootstrap " + host + " | exec → first answer, median | p95 | warm invocation, median | cold − anchor cold (median) | command |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")

	type built struct {
		arm, hostSize int64
		path          string
		cold, warm    []time.Duration
	}
	bins := make([]built, len(functions))
	for i, f := range functions {
		_, arm, err := e.build(ctx, f.pkg, "arm64")
		if err != nil {
			return result{}, err
		}
		p, hs, err := e.build(ctx, f.pkg, host)
		if err != nil {
			return result{}, err
		}
		bins[i] = built{arm: arm, hostSize: hs, path: p}
	}
	url := srv.URL + "/mcp"
	for range e.opts.coldStarts {
		for i, f := range functions {
			inv := f.inv(url)
			inv.Bootstrap = bins[i].path
			cold, warm, err := bench.ColdStart(ctx, rie, inv)
			if err != nil {
				return result{}, fmt.Errorf("%s: %w", f.name, err)
			}
			bins[i].cold = append(bins[i].cold, cold)
			bins[i].warm = append(bins[i].warm, warm)
		}
	}
	anchor := bench.Summarize(bins[0].cold)
	var sum []summary
	for i, f := range functions {
		c, w := bench.Summarize(bins[i].cold), bench.Summarize(bins[i].warm)
		diff := "—"
		if i > 0 {
			diff = "+" + ms(c.Median-anchor.Median)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.name, bytesString(bins[i].arm), bytesString(bins[i].hostSize),
			ms(c.Median), ms(c.P95), ms(w.Median), diff, command("coldstart"))
		if i > 0 {
			sum = append(sum, summary{
				what: "cold start, " + f.name + ": stripped arm64 bootstrap; exec → first answer (median of " + strconv.Itoa(c.N) + ")",
				measured: fmt.Sprintf("%s; %s (anchor %s, %s)", bytesString(bins[i].arm), ms(c.Median),
					bytesString(bins[0].arm), ms(anchor.Median)),
			})
		}
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// coldStartFunctions are the functions whose cold starts sections 5 and 10
// time: the anchor, and both bootstraps on a real work item against a
// stateless fixture, storing into a directory catalog at catalogDir.
func coldStartFunctions(catalogDir string) []function {
	envFor := func(url string) []string {
		return []string{"MCPFN_EGRESS_ALLOW=" + bench.AllowEntry(url), "MCPFN_CATALOG_DIR=" + catalogDir, "MCPFN_LOCAL=1"}
	}
	return []function{
		{"hellolambda (anchor)", "./bench/cmd/hellolambda", func(string) bench.Invocation {
			return bench.Invocation{Event: []byte(`{}`)}
		}},
		{"discover", "./functions/discover", func(url string) bench.Invocation {
			ev, _ := json.Marshal(map[string]string{"catalog_id": "bench-coldstart", "server_url": url})
			return bench.Invocation{Env: envFor(url), Event: ev, Check: wantJSONField("tool_count", float64(bench.CatalogTools))}
		}},
		{"call", "./functions/call", func(url string) bench.Invocation {
			ev, _ := json.Marshal(map[string]any{"server_url": url, "tool_name": "echo", "arguments": map[string]string{"text": "hello"}})
			return bench.Invocation{Env: envFor(url), Event: ev, Check: wantJSONField("is_error", false)}
		}},
	}
}

func quoteFlags(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		if strings.Contains(f, " ") {
			k, v, _ := strings.Cut(f, "=")
			f = k + "='" + v + "'"
		}
		out[i] = f
	}
	return out
}

// wantJSONField checks that the answer's top-level field has value want.
func wantJSONField(field string, want any) func([]byte) error {
	return func(answer []byte) error {
		var m map[string]any
		if err := json.Unmarshal(answer, &m); err != nil {
			return fmt.Errorf("answer %.200s: %w", answer, err)
		}
		if got := m[field]; got != want {
			return fmt.Errorf("answer %.300s: %s = %v, want %v", answer, field, got, want)
		}
		return nil
	}
}

// 6. Batch concurrency.

func batch(ctx context.Context, e *env) (result, error) {
	discover, _, err := e.build(ctx, "./functions/discover", runtime.GOARCH)
	if err != nil {
		return result{}, err
	}
	urls, allow, stop, err := bench.SlowServers(bench.BatchSize, bench.SlowListing)
	if err != nil {
		return result{}, err
	}
	defer stop()
	event, err := bench.DiscoverBatch(urls)
	if err != nil {
		return result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One SQS event of %d discover records, each for its own stateless go-sdk fixture server whose `tools/list` "+
		"answers after %s, sent to the discover bootstrap under the RIE (directory catalog). Wall: the invocation's round trip; "+
		"items: each work item's `duration_ms` from its summary log line. The anchor is the same batch with "+
		"`MCPFN_BATCH_CONCURRENCY=1`. Each RIE first gets one invalid event, so that init is not in the wall time.\n\n", bench.BatchSize, seconds(bench.SlowListing))
	b.WriteString("| MCPFN_BATCH_CONCURRENCY | records | wall | sum of items | longest item | wall ÷ sum | wall ÷ longest | command |\n|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, conc := range []int{bench.BatchSize, 1} {
		f, err := localstack.StartFunction(localstack.Config{
			Bootstrap: discover,
			Name:      "discover",
			Timeout:   60 * time.Second,
			Env: []string{
				"MCPFN_EGRESS_ALLOW=" + strings.Join(allow, ","),
				"MCPFN_CATALOG_DIR=" + filepath.Join(e.tmp, "catalog-batch"),
				"MCPFN_LOCAL=1",
				"MCPFN_BATCH_CONCURRENCY=" + strconv.Itoa(conc),
			},
		})
		if err != nil {
			return result{}, err
		}
		_, _ = f.Invoke(ctx, []byte(`{}`)) // init; answered with invalid_request_error
		r, err := bench.RunBatch(ctx, f, event, conc, bench.BatchSize)
		stopErr := f.Stop()
		if err != nil {
			return result{body: b.String(), summary: sum}, err
		}
		if stopErr != nil {
			return result{}, stopErr
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %.2f | %.2f | %s |\n", conc, len(r.Items), ms(r.Wall), ms(r.Sum()), ms(r.Longest()),
			bench.Ratio(r.Wall, r.Sum()), bench.Ratio(r.Wall, r.Longest()), command("batch"))
		if conc == bench.BatchSize {
			ratio := bench.Ratio(r.Wall, r.Longest())
			sum = append(sum, summary{
				what:     fmt.Sprintf("batch of %d discover records, servers taking %s: wall vs longest item and sum", bench.BatchSize, seconds(bench.SlowListing)),
				target:   "close to the longest item (≤ 1.5×), not the sum",
				measured: fmt.Sprintf("wall %s; longest %s (%.2f×); sum %s", ms(r.Wall), ms(r.Longest()), ratio, ms(r.Sum())),
				met:      verdictOf(ratio <= 1.5),
			})
		}
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// 7. Store cost.
