package bench

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// RoundTrips is the HTTP requests of one work item, by step, as the server
// saw them: JSON-RPC method names for POSTs, the HTTP method otherwise.
type RoundTrips struct {
	Era    string
	Client item.Client
	Hint   string
	Steps  map[string][]string
}

// Total returns the number of requests over all steps.
func (r RoundTrips) Total() int {
	n := 0
	for _, m := range r.Steps {
		n += len(m)
	}
	return n
}

// RoundTripCase is one configuration of the round-trip count.
type RoundTripCase struct {
	Era    string
	Client item.Client
	Hint   string
}

// RoundTripCases are the measured configurations: per era, shared/mcp
// without and with the era's version as hint, and the raw SDK.
func RoundTripCases() []RoundTripCase {
	var cs []RoundTripCase
	for _, era := range Eras {
		cs = append(cs,
			RoundTripCase{Era: era, Client: item.Ours},
			RoundTripCase{Era: era, Client: item.Ours, Hint: EraVersion[era]},
			RoundTripCase{Era: era, Client: item.SDK},
		)
	}
	return cs
}

// CountRoundTrips runs one work item of c against a fresh in-process
// fixture of c.Era and attributes each request the server received to the
// step during which it arrived.
func CountRoundTrips(ctx context.Context, c RoundTripCase) (RoundTrips, error) {
	h, counters := mcptest.NewHandler(FixtureOptions(c.Era))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv, err := Serve(mux)
	if err != nil {
		return RoundTrips{}, err
	}
	defer srv.Close()
	spec, err := EchoSpec(srv.URL + "/mcp")
	if err != nil {
		return RoundTrips{}, err
	}
	defer spec.HTTPClient.CloseIdleConnections()
	spec.Hint = c.Hint
	rt := RoundTrips{Era: c.Era, Client: c.Client, Hint: c.Hint, Steps: map[string][]string{}}
	seen := 0
	spec.AfterStep = func(step string) {
		m := counters.Methods()
		rt.Steps[step] = m[seen:]
		seen = len(m)
	}
	if err := item.Run(ctx, c.Client, spec); err != nil {
		return RoundTrips{}, fmt.Errorf("round trips, %s era: %w", c.Era, err)
	}
	return rt, nil
}
