// Package policy decides, per tool call, whether mcpfn may run it: a
// catalog's policy document (docs/contract.md, "Policy") compiled once and
// checked per call. Rules match a tool's name exactly or by glob, with an
// optional CEL condition on the arguments; the first match wins, then the
// tool's annotation hints, then the document's default.
package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/mcpfn/mcpfn/shared/strictjson"
)

// Decision is what a policy says of a call.
type Decision string

// The decisions.
const (
	Allow Decision = "allow" // run it
	Ask   Decision = "ask"   // answer approval_required first
	Deny  Decision = "deny"  // refuse it: mcp_tool_not_permitted_error
)

// Document is a policy file as written: Default applies when no rule and
// no hint decides ("allow" when absent).
type Document struct {
	Default Decision `json:"default,omitempty"`
	Rules   []Rule   `json:"rules,omitempty"`
}

// Rule matches calls to Tool (a tool name, or a glob of path.Match's
// syntax: *, ?, [...]) whose arguments satisfy When (a CEL expression of
// type bool over args; empty: always) and decides Decision.
type Rule struct {
	Tool     string   `json:"tool"`
	Decision Decision `json:"decision"`
	When     string   `json:"when,omitempty"`
}

// Limits of a policy document. A document past one is refused whole.
const (
	MaxBytes     = 256 << 10 // the document
	MaxDepth     = 8         // nesting of the document
	MaxRules     = 1000      // rules in a document
	MaxToolBytes = 128       // a rule's tool name or glob (MCP's name limit)
	MaxWhenBytes = 2048      // a rule's condition
)

// ErrInvalid is a policy document refused as written; the error names the
// rule (by index, from 0) and what is wrong with it. It never repeats a
// condition's text beyond its length.
var ErrInvalid = errors.New("policy: invalid policy document")

// Parse reads a policy document exactly (strictjson: no unknown or
// duplicate names, the limits above) and compiles it.
func Parse(data []byte) (*Policy, error) {
	var doc Document
	if err := strictjson.Decode(data, &doc, strictjson.Limits{MaxBytes: MaxBytes, MaxDepth: MaxDepth}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return Compile(doc)
}

// Compile checks doc and compiles its conditions.
func Compile(doc Document) (*Policy, error) {
	if doc.Default == "" {
		doc.Default = Allow
	}
	if !doc.Default.valid() {
		return nil, fmt.Errorf("%w: default %q is not allow, ask or deny", ErrInvalid, cut(string(doc.Default)))
	}
	if len(doc.Rules) > MaxRules {
		return nil, fmt.Errorf("%w: %d rules, at most %d", ErrInvalid, len(doc.Rules), MaxRules)
	}
	p := &Policy{def: doc.Default, rules: make([]rule, len(doc.Rules)), exact: map[string]int{}}
	env, err := newEnv()
	if err != nil {
		return nil, err
	}
	for i, r := range doc.Rules {
		c, err := compileRule(env, r)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %d: %w", ErrInvalid, i, err)
		}
		p.rules[i] = c
		if c.exact && c.when == nil {
			if _, seen := p.exact[r.Tool]; !seen {
				p.exact[r.Tool] = i
			}
		}
	}
	return p, nil
}

func compileRule(env *celEnv, r Rule) (rule, error) {
	switch {
	case r.Tool == "":
		return rule{}, errors.New("tool is empty")
	case len(r.Tool) > MaxToolBytes:
		return rule{}, fmt.Errorf("tool is %d bytes, at most %d", len(r.Tool), MaxToolBytes)
	case !r.Decision.valid():
		return rule{}, fmt.Errorf("decision %q is not allow, ask or deny", cut(string(r.Decision)))
	case len(r.When) > MaxWhenBytes:
		return rule{}, fmt.Errorf("when is %d bytes, at most %d", len(r.When), MaxWhenBytes)
	}
	if _, err := path.Match(r.Tool, ""); err != nil {
		return rule{}, fmt.Errorf("tool %q is not a valid glob: %w", r.Tool, err)
	}
	c := rule{Rule: r, exact: !strings.ContainsAny(r.Tool, `*?[\`)}
	if strings.TrimSpace(r.When) != "" {
		w, err := env.compile(r.When)
		if err != nil {
			return rule{}, err
		}
		c.when = w
	}
	return c, nil
}

func (d Decision) valid() bool { return d == Allow || d == Ask || d == Deny }

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
