package template

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// TestEnvironmentIsAcceptedByTheFunctions resolves each function's
// environment as a deployment would (at every parameter's default, at each
// Number's largest value and at each allowed value) and loads it the way
// the functions' init does, so a template value the code refuses fails here
// rather than at the first cold start.
func TestEnvironmentIsAcceptedByTheFunctions(t *testing.T) {
	d, err := loadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Values CloudFormation gives a !Ref to a resource.
	refs := map[string]string{
		"AWS::DynamoDB::Table": "mcpfn-table",
		"AWS::SQS::Queue":      "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-queue",
		"AWS::KMS::Key":        "1234abcd-12ab-34cd-56ef-1234567890ab",
	}
	type variant struct {
		name  string
		bound bound
		param string // a String parameter set to value
		value string
	}
	variants := []variant{{name: "defaults", bound: atDefault}, {name: "largest numbers", bound: atMax}}
	params, _ := d["Parameters"].(map[string]any)
	for name, p := range params {
		for _, v := range asSlice(path(p, "AllowedValues")) {
			variants = append(variants, variant{name: fmt.Sprintf("%s=%v", name, v), param: name, value: fmt.Sprint(v)})
		}
	}
	for fnName, fn := range d.resources("AWS::Serverless::Function") {
		for _, v := range variants {
			t.Run(fnName+"/"+v.name, func(t *testing.T) {
				env := map[string]string{}
				for _, vars := range []any{
					path(d, "Globals", "Function", "Environment", "Variables"),
					path(fn, "Properties", "Environment", "Variables"),
				} {
					m, _ := vars.(map[string]any)
					for k, expr := range m {
						if id, attr, ok := refName(expr); ok && attr == "" {
							if typ, _ := path(d, "Resources", id, "Type").(string); refs[typ] != "" {
								env[k] = refs[typ]
								continue
							}
							if id == v.param {
								env[k] = v.value
								continue
							}
						}
						r, err := d.resolve(expr, v.bound)
						if err != nil {
							t.Fatalf("%s: %v", k, err)
						}
						env[k] = fmt.Sprint(r)
					}
				}
				if _, err := startup.LoadSettings(func(k string) string { return env[k] }); err != nil {
					t.Errorf("the functions refuse the template's environment: %v", err)
				}
				if _, err := guard.ParseAllowList(env[guard.EnvAllowList]); err != nil {
					t.Errorf("%s=%q: %v", guard.EnvAllowList, env[guard.EnvAllowList], err)
				}
			})
		}
	}
}
