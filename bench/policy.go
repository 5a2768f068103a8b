package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/policy/policytest"
)

// PolicyRules is the size of the policy PolicyCost checks: the most rules a
// document may hold.
const PolicyRules = policy.MaxRules

// PolicyDoc is a policy of n rules (policytest.Rules).
func PolicyDoc(n int) []byte { return policytest.Rules(n) }

// PolicyCosts is what a PolicyRules-rule policy costs: a call the last rule
// decides (every rule tried, its condition run), a call no rule matches,
// and compiling the document, per operation, with allocations.
type PolicyCosts struct {
	LastRule, NoMatch, Compile time.Duration
	LastRuleAllocs             int64
	CompileBytes               int64
}

// PolicyCost measures PolicyCosts with testing.Benchmark.
func PolicyCost(ctx context.Context) (PolicyCosts, error) {
	doc := PolicyDoc(PolicyRules)
	p, err := policy.Parse(doc)
	if err != nil {
		return PolicyCosts{}, err
	}
	last := policy.Call{Tool: fmt.Sprintf("tool_%d", PolicyRules-1), Args: []byte(`{"x": 100000, "to": "bob"}`)}
	if v := p.Decide(ctx, last); v.Rule != PolicyRules-1 {
		return PolicyCosts{}, fmt.Errorf("policy bench: the last rule did not decide: %+v", v)
	}
	none := policy.Call{Tool: "search", Args: []byte(`{"q": "x"}`)}
	decide := func(c policy.Call) testing.BenchmarkResult {
		return testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(ctx, c)
			}
		})
	}
	l, n := decide(last), decide(none)
	c := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := policy.Parse(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	return PolicyCosts{
		LastRule: time.Duration(l.NsPerOp()), NoMatch: time.Duration(n.NsPerOp()), Compile: time.Duration(c.NsPerOp()),
		LastRuleAllocs: l.AllocsPerOp(), CompileBytes: c.AllocedBytesPerOp(),
	}, nil
}
