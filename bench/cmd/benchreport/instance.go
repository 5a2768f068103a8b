package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
)

// 8. Memory per instance.

// instanceMemoryMB is half the template's default MemorySize (1024): the
// smallest size docs/operations.md lists, and the stricter 75 % line.
// instanceBatch is the template's BatchSize, the largest BatchConcurrency.
const (
	instanceMemoryMB = 512
	instanceBatch    = 10
)

type instanceCase struct {
	name, function string
	handler        func() *httptest.Server
	body           func(url string, i int) any
}

func instanceMemory(ctx context.Context, e *env) (result, error) {
	m, err := localstack.StartMoto()
	if err != nil {
		return result{}, err
	}
	defer m.Stop()
	db := dynamodb.NewFromConfig(m.Config(ctx))
	discoverBody := func(url string, i int) any {
		return map[string]string{"catalog_id": fmt.Sprintf("instance-%d-%d", time.Now().UnixNano(), i), "server_url": url}
	}
	callBody := func(url string, i int) any {
		return map[string]any{"server_url": url, "tool_name": "big", "arguments": map[string]any{}}
	}
	var cases []instanceCase
	for _, format := range bench.Formats {
		cases = append(cases, instanceCase{"near-budget " + format + " listings (8,000 tools, 7.6 MB each)", "discover",
			func() *httptest.Server { return httptest.NewServer(bench.NearLimitHandler(format)) }, discoverBody})
	}
	for _, format := range bench.Formats {
		cases = append(cases, instanceCase{"hostile 1 GiB " + format + " answers", "discover",
			func() *httptest.Server { return httptest.NewServer(bench.HostileHandler(format, bench.AttackBytes)) }, discoverBody})
	}
	for _, format := range bench.Formats {
		cases = append(cases, instanceCase{"inflating " + format + " answers (7 MiB of `[],` in an outputSchema)", "discover",
			func() *httptest.Server { return httptest.NewServer(bench.InflatingHandler(format, 7<<20)) }, discoverBody})
	}
	for _, format := range bench.Formats {
		cases = append(cases, instanceCase{"near-limit " + format + " call results (7.9 MB each)", "call",
			func() *httptest.Server { return httptest.NewServer(bench.NearLimitHandler(format)) }, callBody})
	}
	line := int64(instanceMemoryMB) << 20 * 3 / 4
	var b strings.Builder
	fmt.Fprintf(&b, "One SQS event of %d records, `MCPFN_BATCH_CONCURRENCY=%d` and `AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d` (the template's "+
		"defaults and largest concurrency), sent to the real bootstrap under the RIE with its tables in moto. Peak RSS is the "+
		"bootstrap's VmHWM after the invocation, against 75 %% of the memory (%s). The same cases run in `make test` "+
		"(e2e/memory_test.go).\n\n", instanceBatch, instanceBatch, instanceMemoryMB, bytesString(line))
	b.WriteString("| case | function | records | outcome | wall | peak RSS | of memory | verdict | command |\n|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	for i, c := range cases {
		bin, _, err := e.build(ctx, "./functions/"+c.function, runtime.GOARCH)
		if err != nil {
			return result{}, err
		}
		srv := c.handler()
		table := fmt.Sprintf("bench-instance-%d-%d", time.Now().UnixNano(), i)
		if c.function == "discover" {
			err = catalog.CreateTable(ctx, db, table)
		} else {
			err = ledger.CreateTable(ctx, db, table)
		}
		if err != nil {
			srv.Close()
			return result{}, err
		}
		env := append(m.Environ(),
			"MCPFN_EGRESS_ALLOW="+bench.AllowEntry(srv.URL),
			"MCPFN_BATCH_CONCURRENCY="+strconv.Itoa(instanceBatch),
			"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(instanceMemoryMB))
		if c.function == "discover" {
			env = append(env, "MCPFN_CATALOG_TABLE="+table)
		} else {
			env = append(env, "MCPFN_CALLS_TABLE="+table, "MCPFN_CATALOG_DIR="+e.tmp+"/instance-catalog", "MCPFN_LOCAL=1")
		}
		f, err := localstack.StartFunction(localstack.Config{Bootstrap: bin, Name: c.function, Timeout: 120 * time.Second, Env: env})
		if err != nil {
			srv.Close()
			return result{}, err
		}
		var bodies []string
		for j := range instanceBatch {
			body, _ := json.Marshal(c.body(srv.URL, j))
			bodies = append(bodies, string(body))
		}
		event, _ := json.Marshal(bench.SQSEvent(bodies...))
		start := time.Now()
		res, err := f.Invoke(ctx, event)
		wall := time.Since(start)
		peak, perr := f.RuntimePeakRSS()
		_ = f.Stop()
		srv.Close()
		if err != nil {
			return result{body: b.String(), summary: sum}, err
		}
		if perr != nil {
			return result{body: b.String(), summary: sum}, perr
		}
		outcome := outcomes(res)
		ok := peak < line
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %.0f %% | %s | %s |\n", c.name, c.function, instanceBatch, outcome, ms(wall),
			bytesString(peak), 100*float64(peak)/float64(int64(instanceMemoryMB)<<20), verdictOf(ok), command("instance"))
		sum = append(sum, summary{
			what:     fmt.Sprintf("memory per instance, %d %s (%s)", instanceBatch, c.name, c.function),
			target:   fmt.Sprintf("peak RSS < 75 %% of %d MB", instanceMemoryMB),
			measured: fmt.Sprintf("%s (%.0f %%), %s", bytesString(peak), 100*float64(peak)/float64(int64(instanceMemoryMB)<<20), outcome),
			met:      verdictOf(ok),
		})
	}
	b.WriteString("\n")
	return result{summary: sum, body: b.String()}, nil
}

// outcomes counts the outcomes of an invocation's summary lines, as
// "10 succeeded" or "10 requeued (mcp_protocol_error)".
func outcomes(res localstack.Result) string {
	counts := map[string]int{}
	var order []string
	for _, l := range res.Logs {
		var line struct {
			Msg       string `json:"msg"`
			Outcome   string `json:"outcome"`
			ErrorType string `json:"error_type"`
		}
		if json.Unmarshal([]byte(l), &line) != nil || line.Msg != "work item" {
			continue
		}
		k := line.Outcome
		if line.ErrorType != "" {
			k += " (" + line.ErrorType + ")"
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	if len(order) == 0 {
		return orDash(res.ErrorType)
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}
