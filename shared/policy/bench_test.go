package policy_test

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/policy"
)

// BenchmarkDecide1000Rules: the worst case of a 1,000-rule policy, a call
// that every rule is tried for and that the last one decides (500
// conditions evaluated on the way).
func BenchmarkDecide1000Rules(b *testing.B) {
	p, err := policy.Parse([]byte(thousandRules()))
	if err != nil {
		b.Fatal(err)
	}
	call := policy.Call{Tool: "tool_999", Args: []byte(`{"x": 1000, "to": "bob"}`)}
	for b.Loop() {
		if v := p.Decide(b.Context(), call); v.Rule != 999 {
			b.Fatalf("%+v", v)
		}
	}
}

// BenchmarkDecideNoMatch: 1,000 rules, none for the tool (every glob and
// name compared, no condition run): what most calls cost.
func BenchmarkDecideNoMatch(b *testing.B) {
	p, err := policy.Parse([]byte(thousandRules()))
	if err != nil {
		b.Fatal(err)
	}
	call := policy.Call{Tool: "search", Args: []byte(`{"q": "x"}`)}
	for b.Loop() {
		p.Decide(b.Context(), call)
	}
}

// BenchmarkCompile1000Rules: what a cold instance pays once per policy.
func BenchmarkCompile1000Rules(b *testing.B) {
	doc := []byte(thousandRules())
	for b.Loop() {
		if _, err := policy.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
