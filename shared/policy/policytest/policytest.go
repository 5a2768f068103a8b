// Package policytest builds policy documents for tests and benchmarks.
package policytest

import (
	"fmt"
	"strings"
)

// Rules is a policy document of n deny rules and default allow: rule i
// names tool_i, every fifth a glob (glob_i_*) instead, and every second is
// conditioned on args.x (has(args.x) && args.x > i).
func Rules(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"default": "allow", "rules": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		tool := fmt.Sprintf("tool_%d", i)
		if i%5 == 0 {
			tool = fmt.Sprintf("glob_%d_*", i)
		}
		when := ""
		if i%2 == 1 {
			when = fmt.Sprintf(`, "when": "has(args.x) && args.x > %d"`, i)
		}
		fmt.Fprintf(&b, `{"tool": %q, "decision": "deny"%s}`, tool, when)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
