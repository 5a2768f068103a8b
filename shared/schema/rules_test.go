package schema

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRulesVersionNamesTheCompiler: RulesVersion ends with the
// jsonschema-go release the module requires, so upgrading it fails here
// until RulesVersion is changed, and verdicts stored under the old release
// are not reused.
func TestRulesVersionNamesTheCompiler(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/google/jsonschema-go").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if want := "/jsonschema-go@" + strings.TrimSpace(string(out)); !strings.HasSuffix(RulesVersion, want) {
		t.Errorf("RulesVersion = %q, want it changed and ending %q", RulesVersion, want)
	}
}
