package schema

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestCompilesRemembersRegexpsVerdict: a pattern's verdict, fresh or
// remembered, is regexp.Compile's, and a long pattern is not kept.
func TestCompilesRemembersRegexpsVerdict(t *testing.T) {
	long := strings.Repeat("a", maxCachedPattern) + "("
	for _, p := range []string{`^[a-z]+$`, `(unclosed`, `(?=lookahead)`, `x{2,1}`, long} {
		_, want := regexp.Compile(p)
		for i := range 2 {
			if got := compiles(p); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q, call %d: %v, want %v", p, i+1, got, want)
			}
		}
	}
	if patternVerdicts.Contains(long) || !patternVerdicts.Contains(`(unclosed`) {
		t.Errorf("kept the %d-byte pattern, or not the short refused one", len(long))
	}
}
