package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// EchoSpec is the overhead benchmark's work item against url: list the
// 50-tool catalog, call echo, check both answers.
func EchoSpec(url string) (item.Spec, error) {
	hc, err := mcptest.LoopbackClient(url, 30*time.Second)
	if err != nil {
		return item.Spec{}, err
	}
	return item.Spec{
		URL:        url,
		HTTPClient: hc,
		Tool:       "echo",
		Arguments:  json.RawMessage(`{"text":"hello"}`),
		WantText:   "hello",
		WantTools:  CatalogTools,
	}, nil
}

// Samples holds per-item durations by era and client.
type Samples map[string]map[item.Client][]time.Duration

// Overhead runs n timed work items per era and client (item.Clients and
// OursTraced) against urls (era → endpoint), after warmup untimed ones.
// Items are interleaved: each round runs every era and client once, the
// client order reversed every other round. Any failed item ends the run
// with its error.
func Overhead(ctx context.Context, urls map[string]string, n, warmup int) (Samples, error) {
	x, err := StartExporter(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = x.Stop(context.Background()) }()
	specs := map[string]item.Spec{}
	out := Samples{}
	for _, era := range Eras {
		s, err := EchoSpec(urls[era])
		if err != nil {
			return nil, err
		}
		specs[era] = s
		out[era] = map[item.Client][]time.Duration{}
	}
	for round := range warmup + n {
		order := []item.Client{item.Ours, item.SDK, OursTraced}
		if round%2 == 1 {
			order = []item.Client{OursTraced, item.SDK, item.Ours}
		}
		for _, era := range Eras {
			for _, c := range order {
				run := item.Run
				if c == OursTraced {
					run = func(ctx context.Context, _ item.Client, s item.Spec) error { return x.Run(ctx, s) }
				}
				start := time.Now()
				if err := run(ctx, c, specs[era]); err != nil {
					return nil, fmt.Errorf("%s era, round %d: %w", era, round, err)
				}
				if round >= warmup {
					out[era][c] = append(out[era][c], time.Since(start))
				}
			}
		}
	}
	return out, nil
}
