package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// RTTs are the round-trip times the RTT measurement injects.
var RTTs = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond}

// Work items of the RTT measurement.
const (
	WorkDiscover = "discover" // connect, list the catalog, close
	WorkCall     = "call"     // connect, call echo, close
)

// Works lists both, discover first.
var Works = []string{WorkDiscover, WorkCall}

// RTTCase is one configuration of the RTT measurement. Hint is
// Config.ProtocolVersion and Primed sets Config.Discovery from an earlier
// connection (shared/mcp only).
type RTTCase struct {
	Work   string
	Era    string
	Client item.Client
	Hint   string
	Primed bool
}

// RTTCases are the measured configurations, grouped by work item and era:
// the raw SDK, then shared/mcp without and with the era's version as hint,
// and, for a call in the stateless era, primed as well.
func RTTCases() []RTTCase {
	var cs []RTTCase
	for _, w := range Works {
		for _, era := range Eras {
			cs = append(cs,
				RTTCase{Work: w, Era: era, Client: item.SDK},
				RTTCase{Work: w, Era: era, Client: item.Ours},
				RTTCase{Work: w, Era: era, Client: item.Ours, Hint: EraVersion[era]},
			)
			if w == WorkCall && era == Stateless {
				cs = append(cs, RTTCase{Work: w, Era: era, Client: item.Ours, Hint: EraVersion[era], Primed: true})
			}
		}
	}
	return cs
}

// RTTSample is one case's timed items at one RTT: each successful item's
// wall time and HTTP requests, the TCP connections the proxy accepted
// during them, and the failed items with the first one's error.
type RTTSample struct {
	Case     RTTCase
	Times    []time.Duration
	Requests []int
	Conns    int64
	Failed   int
	Err      error
}

// RTTRun runs n timed items of every case in RTTCases through a
// DelayProxy adding rtt in front of urls (era → fixture endpoint, one
// host:port), after warmup untimed rounds. Each client kind has one HTTP
// client, counting its requests, for all its items, as a Lambda instance
// keeps its connections warm. Rounds run every case once, grouped by work
// item and era; a group's order reverses every other round. Primed cases
// use the Stats.Discovery of one unprimed connection made first; a primed
// item that was not primed, or fell back, fails. A failed item is counted
// in its sample and the run goes on; an error is returned only when the
// proxy, the clients or the priming connection fail.
func RTTRun(ctx context.Context, urls map[string]string, rtt time.Duration, n, warmup int) ([]RTTSample, error) {
	return RTTRunCases(ctx, urls, rtt, RTTCases(), n, warmup)
}

// RTTRunCases is RTTRun over cases, a subset of RTTCases in its order.
func RTTRunCases(ctx context.Context, urls map[string]string, rtt time.Duration, cases []RTTCase, n, warmup int) ([]RTTSample, error) {
	u, err := url.Parse(urls[Eras[0]])
	if err != nil {
		return nil, err
	}
	p, err := NewDelayProxy(u.Host, rtt)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	base := "http://" + p.Addr
	clients := map[item.Client]*countingClient{}
	for _, c := range item.Clients {
		hc, err := mcptest.LoopbackClient(base, 30*time.Second)
		if err != nil {
			return nil, err
		}
		defer hc.CloseIdleConnections()
		clients[c] = newCountingClient(hc)
	}

	discovery, err := recordDiscovery(ctx, base+"/"+Stateless, clients[item.Ours].Client)
	if err != nil {
		return nil, fmt.Errorf("rtt %s: %w", rtt, err)
	}

	out := make([]RTTSample, len(cases))
	for i, c := range cases {
		out[i].Case = c
	}
	groups := rttGroups(cases)
	for round := range warmup + n {
		for _, g := range groups {
			if round%2 == 1 {
				g = slices.Clone(g)
				slices.Reverse(g)
			}
			for _, i := range g {
				c := cases[i]
				cc := clients[c.Client]
				spec := rttSpec(c, base+"/"+c.Era, cc.Client)
				var st mcp.Stats
				if c.Primed {
					spec.Discovery = discovery
					spec.Stats = func(s mcp.Stats) { st = s }
				}
				req0, conn0 := cc.requests.Load(), p.Accepted()
				start := time.Now()
				err := item.Run(ctx, c.Client, spec)
				d := time.Since(start)
				if err == nil && c.Primed && (!st.Primed || st.PrimeFallback) {
					err = fmt.Errorf("%w: not primed (Primed %t, PrimeFallback %t)", item.ErrUnexpected, st.Primed, st.PrimeFallback)
				}
				switch {
				case round < warmup:
				case err != nil:
					out[i].Failed++
					if out[i].Err == nil {
						out[i].Err = fmt.Errorf("round %d: %w", round, err)
					}
				default:
					out[i].Times = append(out[i].Times, d)
					out[i].Requests = append(out[i].Requests, int(cc.requests.Load()-req0))
					out[i].Conns += p.Accepted() - conn0
				}
			}
		}
	}
	return out, nil
}

// recordDiscovery connects to endpoint through shared/mcp, unprimed, and
// returns the Stats.Discovery to prime later connections with.
func recordDiscovery(ctx context.Context, endpoint string, hc *http.Client) (string, error) {
	conn, err := mcp.Connect(ctx, mcp.Config{URL: endpoint, HTTPClient: hc})
	if err != nil {
		return "", fmt.Errorf("priming connection: %w", err)
	}
	d := conn.Stats().Discovery
	if err := conn.Close(); err != nil {
		return "", fmt.Errorf("priming connection: %w", err)
	}
	if d == "" {
		return "", fmt.Errorf("priming connection: %w: no Stats.Discovery from %s", item.ErrUnexpected, endpoint)
	}
	return d, nil
}

// rttGroups returns the indexes of cases sharing a work item and era, in
// order.
func rttGroups(cases []RTTCase) [][]int {
	var groups [][]int
	for i, c := range cases {
		if i > 0 && c.Work == cases[i-1].Work && c.Era == cases[i-1].Era {
			groups[len(groups)-1] = append(groups[len(groups)-1], i)
			continue
		}
		groups = append(groups, []int{i})
	}
	return groups
}

// rttSpec is c's work item against endpoint through hc.
func rttSpec(c RTTCase, endpoint string, hc *http.Client) item.Spec {
	s := item.Spec{URL: endpoint, HTTPClient: hc, Hint: c.Hint}
	switch c.Work {
	case WorkDiscover:
		s.WantTools = CatalogTools
	case WorkCall:
		s.SkipList = true
		s.Tool, s.Arguments, s.WantText = "echo", json.RawMessage(`{"text":"hello"}`), "hello"
	}
	return s
}

// countingClient is an HTTP client that counts the requests sent through
// it.
type countingClient struct {
	*http.Client
	requests atomic.Int64
}

func newCountingClient(hc *http.Client) *countingClient {
	cc := &countingClient{}
	c := *hc
	c.Transport = countingTransport{next: hc.Transport, n: &cc.requests}
	cc.Client = &c
	return cc
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}
