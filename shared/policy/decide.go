package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
)

// Policy is a compiled policy document; nil is no policy (everything is
// allowed, as without one). It is safe for concurrent use.
type Policy struct {
	def   Decision
	rules []rule
	exact map[string]int // tool name → first exact rule without condition
}

type rule struct {
	Rule
	exact bool // Tool has no glob characters
	when  *condition
}

// Call is what a policy is asked about: the tool's name as the server
// lists it, the call's arguments (a JSON object; empty: none), and the
// tool's annotation hints as the server set them (absent: false).
type Call struct {
	Tool        string
	Args        json.RawMessage
	ReadOnly    bool
	Destructive bool
}

// Verdict is a decision and what made it: Rule is the deciding rule's
// index (-1: none), By names the source ("rule", "readOnlyHint",
// "destructiveHint", "default", "no policy") and Reason says it in one
// line that never quotes an argument.
type Verdict struct {
	Decision Decision
	Rule     int
	By       string
	Reason   string
}

// Decide returns p's verdict on c: the first rule whose tool matches and
// whose condition holds; else allow for a read-only tool, ask for a
// destructive one; else the default. A condition that cannot be evaluated
// (arguments that are not an object, a key it reads absent, its cost
// limit) denies, naming the rule.
func (p *Policy) Decide(ctx context.Context, c Call) Verdict {
	if p == nil {
		return Verdict{Decision: Allow, Rule: -1, By: "no policy", Reason: "the catalog has no policy"}
	}
	var args map[string]any
	var argsErr error
	decoded := false
	for i := range p.firstCandidate(c.Tool) {
		r := &p.rules[i]
		if !r.matches(c.Tool) {
			continue
		}
		if r.when != nil {
			if !decoded {
				args, argsErr = decodeArgs(c.Args)
				decoded = true
			}
			if argsErr != nil {
				return denyBy(i, r, argsErr)
			}
			ok, err := r.when.holds(ctx, args)
			if err != nil {
				return denyBy(i, r, err)
			}
			if !ok {
				continue
			}
		}
		return Verdict{Decision: r.Decision, Rule: i, By: "rule", Reason: fmt.Sprintf("rule %d (tool %q%s) decides %s", i, r.Tool, whenNote(r), r.Decision)}
	}
	switch {
	case c.ReadOnly:
		return Verdict{Decision: Allow, Rule: -1, By: "readOnlyHint", Reason: "no rule matches; the tool is read-only (readOnlyHint)"}
	case c.Destructive:
		return Verdict{Decision: Ask, Rule: -1, By: "destructiveHint", Reason: "no rule matches; the tool is destructive (destructiveHint)"}
	}
	return Verdict{Decision: p.def, Rule: -1, By: "default", Reason: fmt.Sprintf("no rule matches; the default is %s", p.def)}
}

// firstCandidate is how many rules Decide must try: all of them, or up to
// and including the first exact unconditional rule for tool.
func (p *Policy) firstCandidate(tool string) int {
	if i, ok := p.exact[tool]; ok {
		return i + 1
	}
	return len(p.rules)
}

func (r *rule) matches(tool string) bool {
	if r.exact {
		return r.Tool == tool
	}
	ok, _ := path.Match(r.Tool, tool) // checked when compiled
	return ok
}

func denyBy(i int, r *rule, err error) Verdict {
	return Verdict{Decision: Deny, Rule: i, By: "rule", Reason: fmt.Sprintf("rule %d (tool %q%s) denies: %v", i, r.Tool, whenNote(r), err)}
}

func whenNote(r *rule) string {
	if r.when == nil {
		return ""
	}
	return fmt.Sprintf(", when %q", cut(r.When))
}

// decodeArgs reads a call's arguments for CEL: an object (empty: {}),
// integers as int64 where they fit, other numbers as float64.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: the arguments are not JSON", errCondition)
	}
	m, ok := numbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the arguments are not an object", errCondition)
	}
	return m, nil
}

// numbers replaces v's json.Numbers with int64 or float64.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
