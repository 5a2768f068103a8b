package template

import (
	"testing"

	"github.com/mcpfn/mcpfn/shared/startup"
)

// TestEnvironmentNamesAreSettings checks that every variable the template
// sets on a function (Globals and its own) is a name the functions know
// (startup.CheckNames), so a misspelt MCPFN_ name fails here rather than
// refusing the first cold start.
func TestEnvironmentNamesAreSettings(t *testing.T) {
	d := realTemplate(t)
	fns := d.resources("AWS::Serverless::Function")
	if len(fns) == 0 {
		t.Fatal("no functions in the template")
	}
	for name, fn := range fns {
		var environ []string
		for _, vars := range []any{
			path(d, "Globals", "Function", "Environment", "Variables"),
			path(fn, "Properties", "Environment", "Variables"),
		} {
			m, _ := vars.(map[string]any)
			for k := range m {
				environ = append(environ, k+"=")
			}
		}
		if err := startup.CheckNames(environ); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
