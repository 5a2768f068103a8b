package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/bench/item"
)

// 9. Work items under an injected round-trip time.

// rttWarmup is the untimed rounds per RTT: they open the HTTP clients'
// connections.
const rttWarmup = 1

// Targets of the RTT section, ours ÷ go-sdk (median).
const (
	rttPrimedTarget     = 0.55 // call, stateless era, primed
	rttDiscoverTarget   = 1.02 // discover, no hint, either era
	rttLegacyHintTarget = 0.85 // call, legacy era, with the hint
)

func injectedRTT(ctx context.Context, e *env) (result, error) {
	fx, err := startFixtures()
	if err != nil {
		return result{}, err
	}
	defer fx.Stop()
	items := e.opts.rttItems
	var per []string
	for i, rtt := range bench.RTTs {
		per = append(per, fmt.Sprintf("%d at %s", items[i], millis(rtt)))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Two work items: **discover** = connect, list the %d-tool catalog of section 1, close; **call** = connect, call `echo`, close. "+
		"The fixtures are section 1's (go-sdk v1.8.0 handlers, legacy and stateless, in a child process). Between client and fixture, "+
		"a TCP proxy on loopback (`bench.DelayProxy`) writes every chunk it reads, in either direction, RTT/2 after reading it and in order, "+
		"so each HTTP request and its answer cost one RTT; a new TCP connection's first chunk waits one RTT more, for the handshake the "+
		"loopback accept skips. Nothing else is delayed: no bandwidth limit, no loss, no TLS. "+
		"Each client kind (shared/mcp, go-sdk) has one guarded HTTP client per RTT for all its items, as a warm Lambda instance keeps its "+
		"keep-alive connections; requests are counted on that client, connections at the proxy. The raw anchor is section 1's, no hint; "+
		"\"hint\" is `Config.ProtocolVersion` set to the era's version (the call function passes the catalog's); the discover function "+
		"connects without one. \"Primed\" adds `Config.Discovery`: the `Stats.Discovery` of one unprimed connection made before the "+
		"items, as the call function takes it from the catalog; every primed item must report `Stats.Primed` and no fallback. "+
		"Timed items per case: %s (fewer where the spread is smaller), after %d untimed round, interleaved: each round runs every "+
		"case once, grouped by work item and era, the order within a group reversing every other round. Ratio = ours ÷ go-sdk, "+
		"medians of the same work item, era and RTT. New connections: those the proxy accepted during the case's timed items.\n\n", bench.CatalogTools, strings.Join(per, ", "), rttWarmup)
	b.WriteString("| RTT | work item | era | client | items | failed | median | p95 | ratio (median) | requests/item | new connections | command |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var sum []summary
	var failures []string
	for i, rtt := range bench.RTTs {
		samples, err := bench.RTTRun(ctx, fx.URL, rtt, items[i], rttWarmup)
		if err != nil {
			return result{body: b.String(), summary: sum}, err
		}
		byCase := map[bench.RTTCase]bench.RTTSample{}
		for _, s := range samples {
			byCase[s.Case] = s
		}
		// ratio compares c with the raw SDK on the same work item and era;
		// ok is false when either had a failed item.
		ratio := func(c bench.RTTCase) (q float64, cell string, ok bool) {
			raw := c
			raw.Client, raw.Hint, raw.Primed = item.SDK, "", false
			o, r := byCase[c], byCase[raw]
			om, rm := bench.Summarize(o.Times).Median, bench.Summarize(r.Times).Median
			q = bench.Ratio(om, rm)
			cell = fmt.Sprintf("%.3f (%s vs %s)", q, ms(om), ms(rm))
			if failed := o.Failed + r.Failed; failed > 0 {
				cell += fmt.Sprintf(", %s failed", plural(failed, "item"))
			}
			return q, cell, o.Failed+r.Failed == 0 && len(o.Times) > 0 && len(r.Times) > 0
		}
		for _, s := range samples {
			c, m := s.Case, bench.Summarize(s.Times)
			q, _, _ := ratio(c)
			fmt.Fprintf(&b, "| %s | %s | %s (%s) | %s | %d | %d | %s | %s | %.3f | %s | %d | %s |\n", millis(rtt), c.Work, c.Era, bench.EraVersion[c.Era],
				rttClient(c), m.N, s.Failed, ms(m.Median), ms(m.P95), q, countRange(s.Requests), s.Conns, command("rtt"))
			if s.Err != nil {
				failures = append(failures, fmt.Sprintf("- %s, %s, %s era, %s: %d failed; first: `%s`\n", millis(rtt), c.Work, c.Era, rttClient(c), s.Failed, oneLine(s.Err.Error(), 300)))
			}
		}

		q, cell, ok := ratio(bench.RTTCase{Work: bench.WorkCall, Era: bench.Stateless, Client: item.Ours, Hint: bench.EraVersion[bench.Stateless], Primed: true})
		sum = append(sum, summary{
			what:     fmt.Sprintf("RTT %s, call, stateless era: median time per item, ours primed (hint %s) ÷ go-sdk", millis(rtt), bench.EraVersion[bench.Stateless]),
			target:   fmt.Sprintf("≤ %.2f", rttPrimedTarget),
			measured: cell,
			met:      verdictOf(ok && q <= rttPrimedTarget),
		})
		var cells []string
		allOK := true
		for _, era := range bench.Eras {
			q, cell, ok := ratio(bench.RTTCase{Work: bench.WorkDiscover, Era: era, Client: item.Ours})
			allOK = allOK && ok && q <= rttDiscoverTarget
			cells = append(cells, era+" "+cell)
		}
		sum = append(sum, summary{
			what:     fmt.Sprintf("RTT %s, discover: median time per item, ours without hint ÷ go-sdk, both eras", millis(rtt)),
			target:   fmt.Sprintf("≤ %.2f", rttDiscoverTarget),
			measured: strings.Join(cells, "; "),
			met:      verdictOf(allOK),
		})
		q, cell, ok = ratio(bench.RTTCase{Work: bench.WorkCall, Era: bench.Legacy, Client: item.Ours, Hint: bench.EraVersion[bench.Legacy]})
		sum = append(sum, summary{
			what:     fmt.Sprintf("RTT %s, call, legacy era: median time per item, ours with hint %s ÷ go-sdk", millis(rtt), bench.EraVersion[bench.Legacy]),
			target:   fmt.Sprintf("≤ %.2f", rttLegacyHintTarget),
			measured: cell,
			met:      verdictOf(ok && q <= rttLegacyHintTarget),
		})
	}
	b.WriteString("\n")
	if len(failures) > 0 {
		b.WriteString("Failed items (left out of the times; a verdict whose cases had one is not met):\n\n" + strings.Join(failures, "") + "\n")
	}
	return result{summary: sum, body: b.String()}, nil
}

// millis prints a round-trip time in whole milliseconds.
func millis(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// rttClient names a case's client and its configuration.
func rttClient(c bench.RTTCase) string {
	s := string(c.Client)
	if c.Hint != "" {
		s += ", hint " + c.Hint
	}
	if c.Primed {
		s += ", primed"
	}
	return s
}

// countRange prints the range of counts, or the count when all are equal.
func countRange(counts []int) string {
	if len(counts) == 0 {
		return "—"
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
