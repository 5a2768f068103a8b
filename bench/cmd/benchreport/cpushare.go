package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

// 10. The instance at Lambda's CPU share.

// cpuShareSizes are the memory sizes the section holds the bootstrap to:
// the smallest listed size and the size of one whole vCPU.
var cpuShareSizes = []int{512, bench.MBPerVCPU}

// cpuShareTimeout is the function timeout of the template's discover.
const cpuShareTimeout = 180 * time.Second

// cpuRun is one delivery of a batch: the bootstrap's wall and CPU time,
// its outcomes, and the records to deliver again.
type cpuRun struct {
	wall, cpu time.Duration
	outcome   string
	failed    []string // bodies of the batch item failures
}

// cpuInstance is a discover bootstrap under the RIE in a CPU cgroup.
type cpuInstance struct {
	f   *localstack.Function
	bin string
}

func (in *cpuInstance) deliver(ctx context.Context, bodies []string) (cpuRun, error) {
	before := in.cpu()
	event, _ := json.Marshal(bench.SQSEvent(bodies...))
	start := time.Now()
	res, err := in.f.Invoke(ctx, event)
	run := cpuRun{wall: time.Since(start)}
	if err != nil {
		return run, err
	}
	run.cpu, run.outcome = in.cpu()-before, outcomes(res)
	var resp events.SQSEventResponse
	_ = json.Unmarshal(res.Payload, &resp)
	for _, f := range resp.BatchItemFailures {
		i, _ := strconv.Atoi(strings.TrimPrefix(f.ItemIdentifier, "bench-"))
		if i >= 0 && i < len(bodies) {
			run.failed = append(run.failed, bodies[i])
		}
	}
	return run, nil
}

// cpu is the bootstrap's CPU time so far; 0 before it has started.
func (in *cpuInstance) cpu() time.Duration {
	pid, err := bench.ChildNamed(in.f.PID(), filepath.Base(in.bin))
	if err != nil {
		return 0
	}
	d, _ := bench.ProcessCPU(pid)
	return d
}

func cpuShare(ctx context.Context, e *env) (result, error) {
	probe, err := bench.NewCPUCgroup("mcpfn-bench-probe", 1)
	if err != nil {
		return result{body: fmt.Sprintf("Skipped: %s.\n\n", err)}, nil
	}
	_ = probe.Remove()
	m, err := localstack.StartMoto()
	if err != nil {
		return result{}, err
	}
	defer m.Stop()
	db := dynamodb.NewFromConfig(m.Config(ctx))
	bin, _, err := e.build(ctx, "./functions/discover", runtime.GOARCH)
	if err != nil {
		return result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One SQS event of %d discover records, `MCPFN_BATCH_CONCURRENCY=%d`, sent to the real bootstrap under the RIE "+
		"(timeout %s, tables in moto), with the RIE and the bootstrap in a cgroup v1 group whose `cpu.cfs_quota_us` holds them to "+
		"MemorySize ÷ %d of one core. CPU is the run time of the bootstrap's threads over the delivery (/proc/PID/task/*/schedstat, in ns); the first "+
		"delivery's includes the bootstrap's init. Records a delivery hands back are delivered again, as SQS would, at most twice more. "+
		"Each listing is %d tools in one JSON page of about 7.6 MB. The machine is shared: wall and CPU times move with its load from "+
		"run to run (contention also raises CPU time), so the CPU verdicts read ours against the raw SDK's listing measured in the same run.\n\n",
		instanceBatch, instanceBatch, cpuShareTimeout, bench.MBPerVCPU, bench.NearLimitTools)
	b.WriteString("| MemorySize | CPU share | case | delivery | records | outcome | wall | CPU | command |\n|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	cases := []struct {
		name    string
		handler http.Handler
		again   bool // deliver the whole batch again once stored: unchanged re-discoveries
	}{
		{"one shared schema", bench.NearLimitHandler(bench.FormatJSON), false},
		{"distinct schemas (~900 B each)", bench.DistinctSchemaHandler(bench.FormatJSON, bench.NearLimitTools), true},
	}
	var raws []rawListing
	for _, mb := range cpuShareSizes {
		share := float64(mb) / bench.MBPerVCPU
		for ci, c := range cases {
			var raw rawListing
			if c.again {
				if raw, err = measureRawListing(ctx, e, mb, bench.NearLimitTools, rawListingRuns); err != nil {
					return result{summary: sum, body: b.String()}, err
				}
				raws = append(raws, raw)
			}
			rows, s, err := cpuShareCase(ctx, db, m, bin, mb, share, ci, c.name, c.handler, raw)
			b.WriteString(rows)
			sum = append(sum, s...)
			if err != nil {
				return result{summary: sum, body: b.String()}, err
			}
		}
	}
	raw, err := measureRawListing(ctx, e, singleMB, singleAnchorTools, rawListingRuns)
	if err != nil {
		return result{summary: sum, body: b.String()}, err
	}
	raws = append(raws, raw)
	rows, s, err := singleDiscoveries(ctx, db, m, bin, raw)
	b.WriteString(rows)
	sum = append(sum, s...)
	if err != nil {
		return result{summary: sum, body: b.String()}, err
	}
	b.WriteString(rawListingTable(raws))
	for _, part := range []func() (string, []summary, error){
		func() (string, []summary, error) { return cpuShareCalls(ctx, e, db, m, bin) },
		func() (string, []summary, error) { return cpuShareColdStart(ctx, e) },
	} {
		rows, s, err := part()
		b.WriteString(rows)
		sum = append(sum, s...)
		if err != nil {
			return result{summary: sum, body: b.String()}, err
		}
	}
	return result{summary: sum, body: b.String()}, nil
}

// cpuShareCase delivers a batch of near-budget listings served by h until
// every record is stored or three deliveries have passed, and then, when
// raw is set (its tools > 0), the whole batch again: unchanged
// re-discoveries, judged against ten of raw's warm listings.
func cpuShareCase(ctx context.Context, db *dynamodb.Client, m *localstack.Moto, bin string, mb int, share float64, ci int,
	name string, h http.Handler, raw rawListing) (string, []summary, error) {
	var b strings.Builder
	var sum []summary
	srv := httptest.NewServer(h)
	defer srv.Close()
	table := fmt.Sprintf("bench-cpu-%d-%d", time.Now().UnixNano(), ci)
	if err := catalog.CreateTable(ctx, db, table); err != nil {
		return "", nil, err
	}
	cg, err := bench.NewCPUCgroup(fmt.Sprintf("mcpfn-bench-%d-%d", mb, time.Now().UnixNano()), share)
	if err != nil {
		return "", nil, err
	}
	env := append(m.Environ(),
		"MCPFN_EGRESS_ALLOW="+bench.AllowEntry(srv.URL),
		"MCPFN_BATCH_CONCURRENCY="+strconv.Itoa(instanceBatch),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(mb),
		"MCPFN_CATALOG_TABLE="+table)
	in, stop, err := startInGroup(cg, bin, "discover", env)
	if err != nil {
		return "", nil, err
	}
	defer stop()
	var bodies []string
	for j := range instanceBatch {
		body, _ := json.Marshal(map[string]string{"catalog_id": fmt.Sprintf("cpu-%d-%d-%d", mb, ci, j), "server_url": srv.URL + "/mcp"})
		bodies = append(bodies, string(body))
	}
	row := func(delivery string, n int, r cpuRun) {
		fmt.Fprintf(&b, "| %d MB | %.2f | %s | %s | %d | %s | %s | %s | %s |\n", mb, share, name, delivery, n, r.outcome, ms(r.wall), ms(r.cpu), command("cpushare"))
	}
	pending, delivery := bodies, 0
	var first cpuRun
	for delivery < 3 && len(pending) > 0 {
		delivery++
		r, err := in.deliver(ctx, pending)
		if err != nil {
			return b.String(), sum, err
		}
		row(strconv.Itoa(delivery), len(pending), r)
		if delivery == 1 {
			first = r
		}
		pending = r.failed
	}
	stored := instanceBatch - len(pending)
	within := delivery
	if len(pending) > 0 {
		within = 0
	}
	what := fmt.Sprintf("%d MB (%.2f vCPU), %d near-budget listings, %s", mb, share, instanceBatch, name)
	sum = append(sum, summary{
		what:     what + ": deliveries to store every record",
		target:   "≤ 2",
		measured: fmt.Sprintf("%d of %d stored after %d deliveries; first delivery %s wall, %s CPU (%s)", stored, instanceBatch, delivery, ms(first.wall), ms(first.cpu), first.outcome),
		met:      verdictOf(within > 0 && within <= 2),
	})
	if raw.tools > 0 && len(pending) == 0 {
		r, err := in.deliver(ctx, bodies)
		if err != nil {
			return b.String(), sum, err
		}
		row("unchanged re-discovery", len(bodies), r)
		v := cpuVerdict(what+": unchanged re-discovery, warm instance, "+r.outcome, r.cpu, time.Duration(instanceBatch)*raw.warm, unchangedLimit,
			fmt.Sprintf("%d × the raw SDK's warm listing of %d tools, %s; first delivery %s", instanceBatch, raw.tools, ms(raw.warm), ms(first.cpu)))
		if r.outcome != fmt.Sprintf("%d succeeded", instanceBatch) {
			v.met = notMet
		}
		sum = append(sum, v)
	}
	return b.String(), sum, nil
}

// singleTools are the listing sizes of the single discoveries, whose
// durations docs/operations.md prices.
var singleTools = []int{100, 1000}

// singleDiscoveries delivers one discover record of 100 and of 1,000
// distinct-schema tools at 512 MB, new and then unchanged, on a warm
// instance (a first record warms it), and reports each delivery's wall
// time: the duration Lambda bills.
func singleDiscoveries(ctx context.Context, db *dynamodb.Client, m *localstack.Moto, bin string, raw rawListing) (string, []summary, error) {
	const mb = singleMB
	share := float64(mb) / bench.MBPerVCPU
	var b strings.Builder
	b.WriteString("\nSingle discoveries at 512 MB on a warm instance (one record a delivery, distinct schemas): the billed durations docs/operations.md prices. " +
		"A warm-up record without a server_url comes first, so the bootstrap's init is not in their CPU; whatever the first discovery " +
		"on the instance sets up once is. The 1,000-tool rows are judged against the raw SDK's listing below.\n\n")
	b.WriteString("| MemorySize | tools | delivery | outcome | wall (billed) | CPU | command |\n|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, n := range singleTools {
		srv := httptest.NewServer(bench.DistinctSchemaHandler(bench.FormatJSON, n))
		table := fmt.Sprintf("bench-cpu-single-%d-%d", n, time.Now().UnixNano())
		if err := catalog.CreateTable(ctx, db, table); err != nil {
			srv.Close()
			return b.String(), sum, err
		}
		cg, err := bench.NewCPUCgroup(fmt.Sprintf("mcpfn-bench-single-%d-%d", n, time.Now().UnixNano()), share)
		if err != nil {
			srv.Close()
			return b.String(), sum, err
		}
		env := append(m.Environ(), "MCPFN_EGRESS_ALLOW="+bench.AllowEntry(srv.URL), "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(mb), "MCPFN_CATALOG_TABLE="+table)
		f, err := localstack.StartFunction(localstack.Config{Bootstrap: bin, Name: "discover", Timeout: cpuShareTimeout, Env: env})
		if err == nil {
			err = cg.Add(f.PID())
		}
		stop := func() {
			if f != nil {
				_ = f.Stop()
			}
			srv.Close()
			time.Sleep(100 * time.Millisecond)
			_ = cg.Remove()
		}
		if err != nil {
			stop()
			return b.String(), sum, err
		}
		in := &cpuInstance{f: f, bin: bin}
		body := func(id string) string {
			b, _ := json.Marshal(map[string]string{"catalog_id": id, "server_url": srv.URL + "/mcp"})
			return string(b)
		}
		// A warm-up record without a server_url starts the runtime and
		// judges no schema: init is not billed per discovery.
		if _, err := in.deliver(ctx, []string{`{"catalog_id":"warm-up"}`}); err != nil {
			stop()
			return b.String(), sum, err
		}
		id := fmt.Sprintf("single-%d", n)
		for _, delivery := range []string{"new", "unchanged"} {
			r, err := in.deliver(ctx, []string{body(id)})
			if err != nil {
				stop()
				return b.String(), sum, err
			}
			fmt.Fprintf(&b, "| %d MB | %d | %s | %s | %s | %s | %s |\n", mb, n, delivery, r.outcome, ms(r.wall), ms(r.cpu), command("cpushare"))
			what := fmt.Sprintf("%d MB, one discovery of %d distinct-schema tools, %s", mb, n, delivery)
			sum = append(sum, summary{
				what:     what,
				target:   "billed duration, priced in docs/operations.md",
				measured: fmt.Sprintf("%s wall, %s CPU (%s)", ms(r.wall), ms(r.cpu), r.outcome),
				met:      noTarget,
			})
			if n == raw.tools {
				sum = append(sum, singleVerdict(what, delivery, r, raw))
			}
		}
		stop()
	}
	return b.String(), sum, nil
}

// startInGroup starts bootstrap bin as function name with env under the
// RIE, in cg. stop ends it, then removes cg; on an error cg is removed too.
func startInGroup(cg *bench.CPUCgroup, bin, name string, env []string) (in *cpuInstance, stop func(), err error) {
	f, err := localstack.StartFunction(localstack.Config{Bootstrap: bin, Name: name, Timeout: cpuShareTimeout, Env: env})
	if err != nil {
		_ = cg.Remove()
		return nil, nil, err
	}
	stop = func() {
		_ = f.Stop()
		time.Sleep(100 * time.Millisecond)
		_ = cg.Remove()
	}
	if err := cg.Add(f.PID()); err != nil {
		stop()
		return nil, nil, err
	}
	return &cpuInstance{f: f, bin: bin}, stop, nil
}
