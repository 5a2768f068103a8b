package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/policy/policytest"
)

// TestHostileDocumentsRefused: each refused whole with ErrInvalid and a
// message that says what is wrong.
func TestHostileDocumentsRefused(t *testing.T) {
	t.Parallel()
	rule := func(tool, when string) string {
		return fmt.Sprintf(`{"rules": [{"tool": %q, "decision": "deny", "when": %q}]}`, tool, when)
	}
	manyRules := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"rules": [`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"tool": "tool_%d", "decision": "deny", "when": "args.x > %d"}`, i, i)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	for _, c := range []struct{ name, doc, says string }{
		{"invalid CEL", rule("t", "args.amount >"), "not valid CEL"},
		{"undeclared variable", rule("t", "amount > 5"), "not valid CEL"},
		{"not a bool", rule("t", "args.amount + 1"), "not bool"},
		{"nested loops over the arguments", rule("t", "args.items.all(a, args.items.all(b, args.items.exists(c, a == b && b == c)))"), "may cost up to"},
		{"allocates without bound", rule("t", "args.items.map(a, args.items.map(b, args.items)).size() > 0"), "may cost up to"},
		{"a condition too long", rule("t", strings.Repeat("true && ", 300)+"true"), "when is"},
		{"deep nesting", rule("t", strings.Repeat("(", 200)+"true"+strings.Repeat(")", 200)), "not valid CEL"},
		{"10 MiB of rules", `{"rules": [` + strings.Repeat(`{"tool": "t", "decision": "deny"},`, 10<<20/34) + `{"tool": "t", "decision": "deny"}]}`, "bytes"},
		{"1,001 rules", manyRules(1001), "1001 rules"},
		{"a bad glob", `{"rules": [{"tool": "deploy_[", "decision": "ask"}]}`, "not a valid glob"},
		{"an empty tool", `{"rules": [{"tool": "", "decision": "ask"}]}`, "tool is empty"},
		{"a bad decision", `{"rules": [{"tool": "t", "decision": "maybe"}]}`, "not allow, ask or deny"},
		{"a bad default", `{"default": "yes"}`, "not allow, ask or deny"},
		{"an unknown field", `{"rules": [{"tool": "t", "decision": "ask", "unless": "x"}]}`, "unless"},
		{"a duplicate field", `{"default": "allow", "default": "deny"}`, "default"},
		{"a wrong case", `{"Default": "allow"}`, "Default"},
		{"not an object", `[]`, "policy"},
		{"trailing data", `{} {}`, "policy"},
	} {
		_, err := policy.Parse([]byte(c.doc))
		if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, err, c.says)
		}
	}
}

// TestThousandRulesAccepted: the limit itself is accepted, conditions and
// all, and decides by its last rule.
func TestThousandRulesAccepted(t *testing.T) {
	t.Parallel()
	p := mustParse(t, thousandRules())
	v := p.Decide(t.Context(), policy.Call{Tool: "tool_999", Args: []byte(`{"x": 1000}`)})
	if v.Decision != policy.Deny || v.Rule != 999 {
		t.Errorf("%+v, want deny by rule 999", v)
	}
}

// thousandRules is MaxRules rules (policytest.Rules).
func thousandRules() string { return string(policytest.Rules(policy.MaxRules)) }
