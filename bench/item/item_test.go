package item

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

func TestRun(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		s := mcptest.NewServer(t, mcptest.Options{Stateless: stateless, ExtraTools: 5})
		for _, c := range Clients {
			for _, tc := range []struct {
				name      string
				spec      Spec
				wantErr   error
				wantSteps []string
			}{
				{
					name:      "list and call",
					spec:      Spec{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), WantText: "hi", WantTools: 15},
					wantSteps: Steps,
				},
				{
					name:      "list only",
					spec:      Spec{WantTools: 15},
					wantSteps: []string{StepConnect, StepList, StepClose},
				},
				{
					name:      "call only",
					spec:      Spec{SkipList: true, Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), WantText: "hi", WantTools: 50},
					wantSteps: []string{StepConnect, StepCall, StepClose},
				},
				{
					name:      "wrong tool count",
					spec:      Spec{Tool: "echo", WantTools: 50},
					wantErr:   ErrUnexpected,
					wantSteps: []string{StepConnect, StepList, StepClose},
				},
				{
					name:      "wrong answer",
					spec:      Spec{Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), WantText: "ho"},
					wantErr:   ErrUnexpected,
					wantSteps: Steps,
				},
			} {
				t.Run(caseName(stateless, c, tc.name), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					var steps []string
					spec := tc.spec
					spec.URL, spec.HTTPClient = s.URL, s.Client()
					spec.AfterStep = func(step string) { steps = append(steps, step) }
					err := Run(ctx, c, spec)
					if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
						t.Errorf("Run = %v, want %v", err, tc.wantErr)
					}
					if diff := cmp.Diff(tc.wantSteps, steps); diff != "" {
						t.Errorf("steps (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}

func caseName(stateless bool, c Client, name string) string {
	era := "legacy"
	if stateless {
		era = "stateless"
	}
	return era + "/" + string(c) + "/" + name
}

func TestConnectUnknownClient(t *testing.T) {
	if _, err := Connect(context.Background(), Client("other"), Spec{}); err == nil {
		t.Error("Connect with an unknown client succeeded")
	}
}

// TestStatsAndDiscovery: Stats receives shared/mcp's Stats after Close,
// whose Discovery primes the next item; the raw SDK ignores both.
func TestStatsAndDiscovery(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := Spec{URL: s.URL, HTTPClient: s.Client(), SkipList: true, Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), WantText: "hi"}

	var first mcp.Stats
	spec := call
	spec.Stats = func(st mcp.Stats) { first = st }
	if err := Run(ctx, Ours, spec); err != nil {
		t.Fatal(err)
	}
	if first.Discovery == "" || first.Primed {
		t.Fatalf("unprimed item: Stats = %+v, want a Discovery and not Primed", first)
	}

	var primed mcp.Stats
	spec = call
	spec.Discovery, spec.Hint = first.Discovery, "2026-07-28"
	spec.Stats = func(st mcp.Stats) { primed = st }
	if err := Run(ctx, Ours, spec); err != nil {
		t.Fatal(err)
	}
	if !primed.Primed || primed.PrimeFallback || primed.Requests != 1 {
		t.Errorf("primed item: Stats = %+v, want Primed, no fallback, 1 request", primed)
	}

	called := false
	spec.Stats = func(mcp.Stats) { called = true }
	if err := Run(ctx, SDK, spec); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("Stats was called for the raw SDK")
	}
}
