package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// callDeliveries is how many batches of primed calls §10 delivers per
// size: the first starts the bootstrap, the others find it warm. Then
// callSingles deliveries of one record each give the billed duration of a
// call invoked alone, as the state machine invokes it.
const (
	callDeliveries = 4
	callSingles    = 3
)

// callsCatalogID is the catalog the primed calls name.
const callsCatalogID = "cpu-calls"

// cpuShareCalls stores the stateless fixture's catalog in moto through the
// discover bootstrap (discoverBin, no CPU limit), then, at each size,
// delivers callDeliveries batches of instanceBatch primed call records
// (catalog_id set, echo, each its own tool_use_id) to the call bootstrap
// under the RIE in a CPU cgroup, its ledger in moto.
func cpuShareCalls(ctx context.Context, e *env, db *dynamodb.Client, m *localstack.Moto, discoverBin string) (string, []summary, error) {
	callBin, _, err := e.build(ctx, "./functions/call", runtime.GOARCH)
	if err != nil {
		return "", nil, err
	}
	h, counters := mcptest.NewHandler(bench.FixtureOptions(bench.Stateless))
	srv, err := serveMux(h)
	if err != nil {
		return "", nil, err
	}
	defer srv.Close()
	url := srv.URL + "/mcp"
	catalogTable := fmt.Sprintf("bench-cpu-calls-catalog-%d", time.Now().UnixNano())
	if err := catalog.CreateTable(ctx, db, catalogTable); err != nil {
		return "", nil, err
	}
	base := append(m.Environ(), "MCPFN_EGRESS_ALLOW="+bench.AllowEntry(srv.URL), "MCPFN_CATALOG_TABLE="+catalogTable)
	if err := storeCallsCatalog(ctx, discoverBin, base, url); err != nil {
		return "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Primed calls: the stateless fixture (%d tools) discovered once into a catalog table in moto, then %d deliveries per size of "+
		"one SQS event of %d call records (`echo`, `catalog_id` set, so each call takes its protocol version and server/discover answer "+
		"from the catalog; each its own `tool_use_id`, so each takes a ledger lease and writes its outcome in moto), "+
		"`MCPFN_BATCH_CONCURRENCY=%d`, to the real call bootstrap under the RIE in the cgroup, then %d deliveries of one record each: "+
		"the billed duration of a call invoked alone. The first delivery's CPU includes the bootstrap's init. Requests to the server other than tools/call are counted: a primed call sends none.\n\n",
		bench.CatalogTools, callDeliveries, instanceBatch, instanceBatch, callSingles)
	b.WriteString("| MemorySize | CPU share | delivery | records | outcome | wall | CPU | other requests to the server | command |\n|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for _, mb := range cpuShareSizes {
		rows, s, err := primedCallsAt(ctx, db, callBin, base, url, mb, counters.Methods)
		b.WriteString(rows)
		sum = append(sum, s...)
		if err != nil {
			return b.String(), sum, err
		}
	}
	return b.String(), sum, nil
}

// storeCallsCatalog discovers url into the catalog table named in env.
func storeCallsCatalog(ctx context.Context, bin string, env []string, url string) error {
	f, err := localstack.StartFunction(localstack.Config{Bootstrap: bin, Name: "discover", Timeout: cpuShareTimeout, Env: env})
	if err != nil {
		return err
	}
	defer func() { _ = f.Stop() }()
	body, _ := json.Marshal(map[string]string{"catalog_id": callsCatalogID, "server_url": url})
	event, _ := json.Marshal(bench.SQSEvent(string(body)))
	res, err := f.Invoke(ctx, event)
	if err != nil {
		return err
	}
	if got := outcomes(res); got != "1 succeeded" {
		return fmt.Errorf("discovering the calls' catalog: %s", got)
	}
	return nil
}

// primedCallsAt runs the primed call batches at mb. methods lists the
// JSON-RPC methods the server has been sent so far.
func primedCallsAt(ctx context.Context, db *dynamodb.Client, bin string, base []string, url string, mb int, methods func() []string) (string, []summary, error) {
	share := float64(mb) / bench.MBPerVCPU
	table := fmt.Sprintf("bench-cpu-calls-ledger-%d-%d", mb, time.Now().UnixNano())
	if err := ledger.CreateTable(ctx, db, table); err != nil {
		return "", nil, err
	}
	cg, err := bench.NewCPUCgroup(fmt.Sprintf("mcpfn-bench-calls-%d-%d", mb, time.Now().UnixNano()), share)
	if err != nil {
		return "", nil, err
	}
	env := append(append([]string(nil), base...), "MCPFN_CALLS_TABLE="+table,
		"MCPFN_BATCH_CONCURRENCY="+strconv.Itoa(instanceBatch), "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(mb))
	in, stop, err := startInGroup(cg, bin, "call", env)
	if err != nil {
		return "", nil, err
	}
	defer stop()
	var b strings.Builder
	var first cpuRun
	var warmWall, warmCPU, singleWall, singleCPU []time.Duration
	var outs []string
	for d := 1; d <= callDeliveries+callSingles; d++ {
		records := instanceBatch
		if d > callDeliveries {
			records = 1
		}
		var bodies []string
		for j := range records {
			body, _ := json.Marshal(map[string]any{"server_url": url, "tool_name": "echo", "arguments": map[string]string{"text": "hello"},
				"catalog_id": callsCatalogID, "tool_use_id": fmt.Sprintf("toolu_cpu_%d_%d_%02d", mb, d, j)})
			bodies = append(bodies, string(body))
		}
		seen := len(methods())
		r, err := in.deliver(ctx, bodies)
		if err != nil {
			return b.String(), nil, err
		}
		other := 0
		for _, method := range methods()[seen:] {
			if method != "tools/call" {
				other++
			}
		}
		delivery := strconv.Itoa(d)
		switch {
		case d == 1:
			first, delivery = r, "1 (with init)"
		case d <= callDeliveries:
			warmWall, warmCPU = append(warmWall, r.wall), append(warmCPU, r.cpu)
		default:
			singleWall, singleCPU = append(singleWall, r.wall), append(singleCPU, r.cpu)
		}
		outs = append(outs, r.outcome)
		fmt.Fprintf(&b, "| %d MB | %.2f | %s | %d | %s | %s | %s | %d | %s |\n", mb, share, delivery, len(bodies), r.outcome, ms(r.wall), ms(r.cpu), other, command("cpushare"))
	}
	w, c := bench.Summarize(warmWall), bench.Summarize(warmCPU)
	sw, sc := bench.Summarize(singleWall), bench.Summarize(singleCPU)
	what := fmt.Sprintf("%d MB (%.2f vCPU), primed calls (echo, ledger and catalog in moto)", mb, share)
	return b.String(), []summary{{
		what: what + fmt.Sprintf(", %d records a delivery", instanceBatch),
		measured: fmt.Sprintf("warm deliveries: %s wall, %s CPU (median of %d); first, with init: %s wall, %s CPU; outcomes %s",
			ms(w.Median), ms(c.Median), w.N, ms(first.wall), ms(first.cpu), strings.Join(outs[:callDeliveries], "; ")),
	}, {
		what:     what + ", one record a delivery, warm",
		target:   "billed duration, priced in docs/operations.md",
		measured: fmt.Sprintf("%s wall, %s CPU (median of %d); outcomes %s", ms(sw.Median), ms(sc.Median), sw.N, strings.Join(outs[callDeliveries:], "; ")),
	}}, nil
}
