package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoTestHelpers: the program behind make run links neither the
// testing package nor any of the project's *test helper packages (issue
// 23: the local stack is not a test helper).
func TestLinksNoTestHelpers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" || (strings.HasPrefix(pkg, "github.com/mcpfn/mcpfn/") && strings.HasSuffix(pkg, "test")) {
			t.Errorf("cmd/localrun links %s", pkg)
		}
	}
}
