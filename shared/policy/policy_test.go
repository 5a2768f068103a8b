package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/policy"
)

const transfers = `{"default": "ask",
 "rules": [{"tool": "deploy_*", "decision": "ask"},
           {"tool": "transfer", "decision": "deny", "when": "args.amount > 1000"},
           {"tool": "transfer", "decision": "allow"},
           {"tool": "search_?", "decision": "allow"},
           {"tool": "wipe", "decision": "deny", "when": "has(args.all) && args.all == true"}]}`

func mustParse(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecide: rules in order, first match wins, conditions over the
// arguments, then the hints, then the default.
func TestDecide(t *testing.T) {
	t.Parallel()
	p := mustParse(t, transfers)
	for _, c := range []struct {
		name string
		call policy.Call
		want policy.Decision
		rule int
		by   string
	}{
		{"glob", policy.Call{Tool: "deploy_prod"}, policy.Ask, 0, "rule"},
		{"condition holds", policy.Call{Tool: "transfer", Args: []byte(`{"amount": 1500}`)}, policy.Deny, 1, "rule"},
		{"condition holds for a float", policy.Call{Tool: "transfer", Args: []byte(`{"amount": 1000.5}`)}, policy.Deny, 1, "rule"},
		{"condition fails: next rule", policy.Call{Tool: "transfer", Args: []byte(`{"amount": 10}`)}, policy.Allow, 2, "rule"},
		{"one-character glob", policy.Call{Tool: "search_x"}, policy.Allow, 3, "rule"},
		{"glob needs the one character", policy.Call{Tool: "search_xy"}, policy.Ask, -1, "default"},
		{"has() guards an absent key", policy.Call{Tool: "wipe", Args: []byte(`{}`)}, policy.Ask, -1, "default"},
		{"no arguments", policy.Call{Tool: "wipe"}, policy.Ask, -1, "default"},
		{"read-only hint", policy.Call{Tool: "lookup", ReadOnly: true}, policy.Allow, -1, "readOnlyHint"},
		{"destructive hint", policy.Call{Tool: "lookup", Destructive: true}, policy.Ask, -1, "destructiveHint"},
		{"rules before hints", policy.Call{Tool: "transfer", ReadOnly: true, Args: []byte(`{"amount": 5000}`)}, policy.Deny, 1, "rule"},
		{"default", policy.Call{Tool: "lookup"}, policy.Ask, -1, "default"},
	} {
		v := p.Decide(t.Context(), c.call)
		if v.Decision != c.want || v.Rule != c.rule || v.By != c.by || v.Reason == "" {
			t.Errorf("%s: %+v, want %s by %s (rule %d)", c.name, v, c.want, c.by, c.rule)
		}
	}
	var none *policy.Policy
	if v := none.Decide(t.Context(), policy.Call{Tool: "wipe", Destructive: true}); v.Decision != policy.Allow || v.By != "no policy" {
		t.Errorf("no policy: %+v, want allow", v)
	}
	if v := mustParse(t, `{}`).Decide(t.Context(), policy.Call{Tool: "x"}); v.Decision != policy.Allow || v.By != "default" {
		t.Errorf("an empty policy: %+v, want allow by default", v)
	}
}

// TestConditionFailsClosed: a condition that cannot be evaluated denies,
// names its rule, and never quotes an argument.
func TestConditionFailsClosed(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{"rules": [{"tool": "transfer", "decision": "allow", "when": "args.amount < 10"}]}`)
	for name, args := range map[string]string{
		"absent key":     `{"currency": "sk-canary-1"}`,
		"not an object":  `["sk-canary-1"]`,
		"not JSON":       `{"amount": sk-canary-1`,
		"wrong type":     `{"amount": "sk-canary-1"}`,
		"null arguments": `null`,
	} {
		v := p.Decide(t.Context(), policy.Call{Tool: "transfer", Args: []byte(args)})
		if v.Decision != policy.Deny || v.Rule != 0 || !strings.Contains(v.Reason, "rule 0") || strings.Contains(v.Reason, "canary") {
			t.Errorf("%s: %+v, want deny by rule 0 quoting no argument", name, v)
		}
	}
}

// TestArgumentsSHA256: key order, whitespace and number spelling do not
// change the hash (RFC 8785); another value does.
func TestArgumentsSHA256(t *testing.T) {
	t.Parallel()
	h := func(s string) string {
		t.Helper()
		out, err := policy.ArgumentsSHA256([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return out
	}
	a := h(`{"to": "bob", "amount": 1000, "memo": "caf\u00e9"}`)
	if b := h(`{"amount":1e3,"memo":"café","to":"bob"}`); a != b {
		t.Errorf("reordered and respelled arguments hash %s, want %s", b, a)
	}
	if c := h(`{"to": "bob", "amount": 1001, "memo": "café"}`); c == a {
		t.Error("other arguments hash the same")
	}
	if h(``) != h(`{}`) {
		t.Error("empty arguments do not hash as {}")
	}
	if _, err := policy.ArgumentsSHA256([]byte(`{"a": 1, "a": 2}`)); err == nil {
		t.Error("duplicate names canonicalised")
	}
}

// TestCacheCompilesOnce: the same document is compiled once; a refused
// one is not kept.
func TestCacheCompilesOnce(t *testing.T) {
	t.Parallel()
	c := policy.NewCache()
	a, err := c.Get([]byte(transfers))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Get([]byte(transfers)); a != b {
		t.Error("the same document compiled twice")
	}
	if p, err := c.Get(nil); p != nil || err != nil {
		t.Errorf("no document: %v, %v; want no policy", p, err)
	}
	for range 2 {
		if _, err := c.Get([]byte(`{"default": "maybe"}`)); !errors.Is(err, policy.ErrInvalid) {
			t.Errorf("a refused document: %v, want ErrInvalid", err)
		}
	}
}
