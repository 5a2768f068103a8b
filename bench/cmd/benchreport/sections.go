package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/internal/localstack"
)

var sections = []section{
	{id: "overhead", num: 1, title: "Overhead per work item: shared/mcp vs raw go-sdk", run: overhead},
	{id: "roundtrips", num: 2, title: "HTTP round trips per work item", run: roundTrips},
	{id: "memory", num: 3, title: "Memory under a hostile 1 GiB tools/list answer", run: memory},
	{id: "overshoot", num: 4, title: "Deadline overshoot against a server that never answers", run: overshoot},
	{id: "coldstart", num: 5, title: "Cold start under the Lambda RIE", run: coldStart},
	{id: "batch", num: 6, title: "SQS batch concurrency", run: batch},
	{id: "store", num: 7, title: "Catalog store cost in DynamoDB requests", run: store},
	{id: "instance", num: 8, title: "Memory per instance: a default batch against 75 % of the function's memory", run: instanceMemory},
	{id: "rtt", num: 9, title: "Work items under an injected round-trip time: shared/mcp vs raw go-sdk", run: injectedRTT},
	{id: "cpushare", num: 10, title: "The instance at Lambda's CPU share", run: cpuShare},
	{id: "longcall", num: 11, title: "The cost of a 20-minute task through the call state machine", run: longCall},
	{id: "policy", num: 12, title: "The policy check: 1,000 rules per call", run: policyCheck},
}

func sectionIDs() []string {
	var ids []string
	for _, s := range sections {
		ids = append(ids, s.id)
	}
	return ids
}

// 1. Overhead.

const allocBench = "BenchmarkItem"

// overheadTarget bounds ours ÷ go-sdk on loopback: a guard rail on CPU
// cost; what a user waits for is section 9's, under a round-trip time.
const overheadTarget = 1.10

// overheadTracedTarget bounds the same ratio with traces exported to a
// loopback collector (issue 25).
const overheadTracedTarget = 1.15

// startFixtures starts this binary as the go-sdk fixture servers' child.
func startFixtures() (*bench.Fixtures, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-"+serveFixtures)
	cmd.Stderr = os.Stderr
	return bench.StartFixtures(cmd)
}

func overhead(ctx context.Context, e *env) (result, error) {
	fx, err := startFixtures()
	if err != nil {
		return result{}, err
	}
	defer fx.Stop()
	samples, err := bench.Overhead(ctx, fx.URL, e.opts.items, e.opts.warmup)
	if err != nil {
		return result{}, err
	}
	allocs, allocErr := benchAllocs(ctx, e.opts.items)

	var b strings.Builder
	fmt.Fprintf(&b, "One work item: connect, list the %d-tool catalog (mcptest's tools plus filler tools with realistic schemas, one page), "+
		"call `echo`, close. The fixtures are go-sdk v1.8.0 handlers in a child process on loopback; both clients share one guarded "+
		"HTTP client. The raw anchor is `sdk.NewClient` + `StreamableClientTransport{DisableStandaloneSSE: true}` per item. "+
		"%d timed items per era and client after %d untimed ones, interleaved (each round runs every era and client once, "+
		"the client order alternating). Ratio = ours ÷ go-sdk. Allocations come from a separate `testing.B` run "+
		"(`-benchmem`, %d items), which counts the client process only. With no round-trip time this is a guard rail on the "+
		"client's own cost (target ≤ %.2f); section 9 measures the same clients behind 20 ms and 100 ms. "+
		"The third client is shared/mcp with traces exported as `MCPFN_TRACES=otlp` does it: the item runs under a recording span, "+
		"ended and flushed over OTLP/HTTP to a loopback receiver after each item (target ≤ %.2f; no allocation run).\n\n",
		bench.CatalogTools, e.opts.items, e.opts.warmup, e.opts.items, overheadTarget, overheadTracedTarget)
	b.WriteString("| era | client | items | median | p95 | ratio (median) | ratio (p95) | allocs/item | bytes/item | command |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, era := range bench.Eras {
		sdk := bench.Summarize(samples[era][item.SDK])
		for _, c := range append(slices.Clone(item.Clients), bench.OursTraced) {
			s := bench.Summarize(samples[era][c])
			name := allocBench + "/" + era + "/" + benchName[c]
			a, ok := allocs[name]
			allocCell, bytesCell := "—", "—"
			if ok {
				allocCell, bytesCell = strconv.FormatInt(a.allocs, 10), bytesString(a.bytes)
			}
			cmdCell := command("overhead")
			if _, ok := benchName[c]; ok {
				cmdCell += fmt.Sprintf("<br>`go test -run '^$' -bench '^%s$/^%s$/^%s$' -benchmem -benchtime %dx ./bench`", allocBench, era, benchName[c], e.opts.items)
			}
			fmt.Fprintf(&b, "| %s (%s) | %s | %d | %s | %s | %.3f | %.3f | %s | %s | %s |\n",
				era, bench.EraVersion[era], c, s.N, ms(s.Median), ms(s.P95),
				bench.Ratio(s.Median, sdk.Median), bench.Ratio(s.P95, sdk.P95),
				allocCell, bytesCell, cmdCell)
		}
		ours := bench.Summarize(samples[era][item.Ours])
		r := bench.Ratio(ours.Median, sdk.Median)
		sum = append(sum, summary{
			what:     fmt.Sprintf("overhead, %s era: median time per item, ours ÷ go-sdk", era),
			target:   fmt.Sprintf("≤ %.2f", overheadTarget),
			measured: fmt.Sprintf("%.3f (%s vs %s; p95 ratio %.3f)", r, ms(ours.Median), ms(sdk.Median), bench.Ratio(ours.P95, sdk.P95)),
			met:      verdictOf(r <= overheadTarget),
		})
		traced := bench.Summarize(samples[era][bench.OursTraced])
		rt := bench.Ratio(traced.Median, sdk.Median)
		sum = append(sum, summary{
			what:     fmt.Sprintf("overhead, %s era, traces exported: median time per item, ours ÷ go-sdk", era),
			target:   fmt.Sprintf("≤ %.2f", overheadTracedTarget),
			measured: fmt.Sprintf("%.3f (%s vs %s; p95 ratio %.3f)", rt, ms(traced.Median), ms(sdk.Median), bench.Ratio(traced.P95, sdk.P95)),
			met:      verdictOf(rt <= overheadTracedTarget),
		})
		ao, aok := allocs[allocBench+"/"+era+"/"+benchName[item.Ours]]
		as, sok := allocs[allocBench+"/"+era+"/"+benchName[item.SDK]]
		if aok && sok {
			sum = append(sum, summary{
				what:     fmt.Sprintf("overhead, %s era: allocations per item, ours vs go-sdk", era),
				measured: fmt.Sprintf("%d vs %d (%.2f×); %s vs %s", ao.allocs, as.allocs, float64(ao.allocs)/float64(as.allocs), bytesString(ao.bytes), bytesString(as.bytes)),
			})
		}
	}
	b.WriteString("\n")
	if allocErr != nil {
		fmt.Fprintf(&b, "Allocations not measured: `%s`\n\n", oneLine(allocErr.Error(), 400))
	}
	return result{summary: sum, body: b.String()}, allocErr
}

var benchName = map[item.Client]string{item.Ours: "shared-mcp", item.SDK: "go-sdk"}

type allocStat struct{ allocs, bytes int64 }

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

// benchAllocs runs BenchmarkItem with -benchmem and returns B/op and
// allocs/op by benchmark name (without the -GOMAXPROCS suffix).
func benchAllocs(ctx context.Context, items int) (map[string]allocStat, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^"+allocBench+"$",
		"-benchmem", "-benchtime", fmt.Sprintf("%dx", items), "-count", "1", "./bench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s: %w\n%s", allocBench, err, out)
	}
	stats := parseBenchmem(out)
	if len(stats) != len(bench.Eras)*len(item.Clients) {
		return stats, fmt.Errorf("go test -bench %s printed %d results, want %d:\n%s", allocBench, len(stats), len(bench.Eras)*len(item.Clients), out)
	}
	return stats, nil
}

// parseBenchmem returns B/op and allocs/op by benchmark name (without the
// -GOMAXPROCS suffix) from go test -benchmem output.
func parseBenchmem(out []byte) map[string]allocStat {
	stats := map[string]allocStat{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		bytesPer, _ := strconv.ParseInt(m[2], 10, 64)
		allocs, _ := strconv.ParseInt(m[3], 10, 64)
		stats[m[1]] = allocStat{allocs: allocs, bytes: bytesPer}
	}
	return stats
}

// 2. Round trips.

func roundTrips(ctx context.Context, e *env) (result, error) {
	var b strings.Builder
	b.WriteString("HTTP requests the server received during each step of one work item (connect, list, call `echo`, close), " +
		"against an in-process go-sdk v1.8.0 fixture. The hint is `Config.ProtocolVersion` set to the version the era negotiates; " +
		"the raw go-sdk client has no hint.\n\n")
	b.WriteString("| era | client | hint | connect | list | call | close | total | target | command |\n|---|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, c := range bench.RoundTripCases() {
		rt, err := bench.CountRoundTrips(ctx, c)
		if err != nil {
			return result{body: b.String(), summary: sum}, err
		}
		target, want := "—", -1
		switch {
		case c.Client == item.Ours && c.Era == bench.Stateless:
			target, want = "3 (discover, list, call)", 3
		case c.Client == item.Ours && c.Era == bench.Legacy && c.Hint != "":
			target, want = "4 + DELETE", 5
		}
		cells := []string{}
		for _, step := range item.Steps {
			m := rt.Steps[step]
			cell := strconv.Itoa(len(m))
			if len(m) > 0 {
				cell += ": " + strings.Join(m, ", ")
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s |\n", c.Era, c.Client, orDash(c.Hint), strings.Join(cells, " | "), rt.Total(), target, command("roundtrips"))
		if want >= 0 {
			hint := "no hint"
			if c.Hint != "" {
				hint = "hint " + c.Hint
			}
			sum = append(sum, summary{
				what:     fmt.Sprintf("round trips, %s era, ours with %s", c.Era, hint),
				target:   target,
				measured: fmt.Sprintf("%d (connect %d, list %d, call %d, close %d)", rt.Total(), len(rt.Steps[item.StepConnect]), len(rt.Steps[item.StepList]), len(rt.Steps[item.StepCall]), len(rt.Steps[item.StepClose])),
				met:      verdictOf(rt.Total() == want),
			})
		}
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// 3. Memory under attack.

func memory(ctx context.Context, e *env) (result, error) {
	if _, err := os.Stat(bench.TimeCommand); err != nil {
		return result{}, fmt.Errorf("%s is missing (apt-get install time; make bench installs it): %w", bench.TimeCommand, err)
	}
	child, err := e.buildTool(ctx, "./bench/cmd/memchild")
	if err != nil {
		return result{}, err
	}
	cfg := bench.MemoryConfig{Child: child, Size: bench.AttackBytes, RSSCap: e.opts.rssCap, Timeout: e.opts.attackTimeout}
	var b strings.Builder
	fmt.Fprintf(&b, "A hostile server completes the handshake (stateless go-sdk fixture) and answers `tools/list` with one well-formed tool "+
		"whose description makes the answer exactly 1 GiB, chunked (no Content-Length), as an `application/json` body or as one SSE event. "+
		"Each client runs in its own child process (`bench/cmd/memchild`: connect, list, close) under `%s -v`; peak RSS is its "+
		"\"Maximum resident set size\", peak heap the child's own sample of live heap objects every 2 ms (`runtime/metrics`). "+
		"A child is killed when its RSS passes %s or it runs for %s; its peaks are then lower bounds (\"≥\"). "+
		"The raw anchor is go-sdk's client with `MaxEventSize` left zero, which on the streamable transport means no cap.\n\n",
		bench.TimeCommand, bytesString(cfg.RSSCap), cfg.Timeout)
	b.WriteString("| answer | client | outcome | time to return | peak RSS | peak heap | command |\n|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, format := range bench.Formats {
		var ours bench.MemoryResult
		for _, c := range item.Clients {
			r, err := bench.MemoryUnderAttack(ctx, cfg, c, format)
			if err != nil {
				return result{body: b.String(), summary: sum}, err
			}
			ge := ""
			if r.Aborted {
				ge = "≥ "
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s%s | %s%s | %s |\n", format, c, oneLine(r.Outcome, 160), ms(r.Elapsed),
				ge, bytesString(r.PeakRSS), ge, bytesString(r.PeakHeap), command("memory"))
			if c == item.Ours {
				ours = r
				continue
			}
			sum = append(sum, summary{
				what:   "memory, 1 GiB " + format + " answer: peak RSS, ours vs go-sdk",
				target: "ours < 64 MiB, failing fast",
				measured: fmt.Sprintf("%s in %s vs %s%s (%s)", bytesString(ours.PeakRSS), ms(ours.Elapsed), ge, bytesString(r.PeakRSS),
					oneLine(firstClause(r.Outcome), 80)),
				met: verdictOf(ours.PeakRSS < 64<<20 && ours.Outcome != "ok" && ours.Elapsed < 5*time.Second),
			})
		}
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

func firstClause(s string) string {
	if s == "ok" {
		return "listed it"
	}
	if strings.HasPrefix(s, "killed") {
		return s
	}
	return "failed"
}

// 4. Deadline overshoot.

func overshoot(ctx context.Context, e *env) (result, error) {
	reps := e.opts.overshootReps
	var b strings.Builder
	fmt.Fprintf(&b, "`Connect` against a TCP listener that accepts and never reads; `ListTools` and `CallTool` on a connected "+
		"session (legacy fixture) whose server never answers that method; `Close` while the session-ending DELETE is never answered. "+
		"Each operation gets a %s deadline; the sample is the time from the deadline to the return (for `Close`, its duration: it "+
		"takes no context). %d repetitions per operation and client; median and max.\n\n", ms(bench.OvershootDeadline), reps)
	b.WriteString("| operation | shared/mcp median | shared/mcp max | go-sdk median | go-sdk max | target (ours) | command |\n|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, op := range bench.Ops {
		got := map[item.Client]bench.Summary{}
		for _, c := range item.Clients {
			d, err := bench.Overshoot(ctx, c, op, reps)
			if err != nil {
				return result{body: b.String(), summary: sum}, err
			}
			got[c] = bench.Summarize(d)
		}
		o, s := got[item.Ours], got[item.SDK]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | ≤ 1 s | %s |\n", op, ms(o.Median), ms(o.Max), ms(s.Median), ms(s.Max), command("overshoot"))
		what := "overshoot past the deadline: " + op
		if op == bench.OpClose {
			what = "duration of Close, DELETE never answered"
		}
		sum = append(sum, summary{
			what:     what + ", ours (go-sdk)",
			target:   "≤ 1 s",
			measured: fmt.Sprintf("max %s (go-sdk max %s)", ms(o.Max), ms(s.Max)),
			met:      verdictOf(o.Max <= time.Second),
		})
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// 5. Cold start.

func store(ctx context.Context, e *env) (result, error) {
	m, err := localstack.StartMoto()
	if err != nil {
		return result{}, err
	}
	defer m.Stop()
	cases, err := bench.StoreCost(ctx, dynamodb.NewFromConfig(m.Config(ctx)))
	if err != nil {
		return result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "`catalog.NewDynamo` over a counting wrapper of its `DynamoAPI`, against moto on loopback (a fresh table). "+
		"The catalog is %d tools with mid-sized schemas; the third Put changes one description, the fourth every one. Items written counts every put "+
		"and delete inside BatchWriteItem plus one per UpdateItem. A changing Put writes the changed tools and the new manifest, flips the head, "+
		"then deletes the replaced tools and manifest (docs/catalog.md): for k changed tools, k + 1 items, 1, and k + 1.\n\n", bench.StoreTools)
	b.WriteString("| Put | GetItem | Query | UpdateItem | BatchWriteItem | requests | write requests | items written | outcome | command |\n|---|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for i, c := range cases {
		r := c.Counts.Requests
		outcome := fmt.Sprintf("unchanged, %d tools", c.Result.ToolCount)
		if ch := c.Result.Changes; ch != nil {
			outcome = fmt.Sprintf("new version, %d tools: %d added, %d removed, %d changed", c.Result.ToolCount, ch.AddedCount, ch.RemovedCount, ch.ChangedCount)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", c.Name, r["GetItem"], r["Query"], r["UpdateItem"],
			r["BatchWriteItem"], c.Counts.Total(), c.Counts.Writes(), c.Counts.ItemsWritten, outcome, command("store"))
		s := summary{what: "store cost: " + c.Name, measured: fmt.Sprintf("%s, %s, %s written", plural(c.Counts.Total(), "request"), plural(c.Counts.Writes(), "write"), plural(c.Counts.ItemsWritten, "item"))}
		switch i {
		case 1:
			s.target = "1 write"
			s.met = verdictOf(c.Counts.Writes() == 1 && c.Result.Unchanged)
		case 2:
			s.target = "≤ 5 writes, ≤ 10 items"
			s.met = verdictOf(c.Counts.Writes() <= 5 && c.Counts.ItemsWritten <= 10 && !c.Result.Unchanged)
		case 3:
			k := 0
			if ch := c.Result.Changes; ch != nil {
				k = ch.AddedCount + ch.RemovedCount + ch.ChangedCount
			}
			s.target = fmt.Sprintf("O(k): ≤ 2k + 5 items (k = %d)", k)
			s.met = verdictOf(c.Counts.ItemsWritten <= 2*k+5 && !c.Result.Unchanged)
		}
		sum = append(sum, s)
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// serveMux serves h at /mcp on a loopback port.
func serveMux(h http.Handler) (*bench.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return bench.Serve(mux)
}
