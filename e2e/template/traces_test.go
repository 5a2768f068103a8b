package template

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestXRayTracesGrant: the Traces parameter sets MCPFN_TRACES (default
// off); only when it is xray are both roles granted exactly xray:PutSpans
// and xray:PutSpansForIndexing (the X-Ray OTLP endpoint), on "*", in a
// policy of its own; no other statement names an X-Ray OTLP action.
func TestXRayTracesGrant(t *testing.T) {
	d := realTemplate(t)
	if def := path(d, "Parameters", "Traces", "Default"); def != "off" {
		t.Errorf("Traces default %v, want off", def)
	}
	if diff := cmp.Diff([]any{"off", "otlp", "xray"}, path(d, "Parameters", "Traces", "AllowedValues")); diff != "" {
		t.Errorf("Traces AllowedValues (-want +got):\n%s", diff)
	}
	if v := path(d, "Globals", "Function", "Environment", "Variables", "MCPFN_TRACES"); !cmp.Equal(v, ref("Traces")) {
		t.Errorf("MCPFN_TRACES = %v, want !Ref Traces", v)
	}
	if c := path(d, "Conditions", "TracesToXRay"); !cmp.Equal(c, map[string]any{"Fn::Equals": []any{ref("Traces"), "xray"}}) {
		t.Errorf("TracesToXRay = %v, want Traces equal to xray", c)
	}
	pol := path(d, "Resources", "XRayTracesPolicy")
	if path(pol, "Type") != "AWS::IAM::Policy" || path(pol, "Condition") != "TracesToXRay" {
		t.Fatalf("XRayTracesPolicy %v: want an AWS::IAM::Policy under TracesToXRay", pol)
	}
	if diff := cmp.Diff([]any{ref("DiscoverRole"), ref("CallRole")}, path(pol, "Properties", "Roles")); diff != "" {
		t.Errorf("XRayTracesPolicy roles (-want +got):\n%s", diff)
	}
	want := []any{map[string]any{"Sid": "XRayTraces", "Effect": "Allow",
		"Action": []any{"xray:PutSpans", "xray:PutSpansForIndexing"}, "Resource": "*"}}
	if diff := cmp.Diff(want, path(pol, "Properties", "PolicyDocument", "Statement")); diff != "" {
		t.Errorf("XRayTracesPolicy statements (-want +got):\n%s", diff)
	}
	rs, _ := d["Resources"].(map[string]any)
	for name, r := range rs {
		if name == "XRayTracesPolicy" {
			continue
		}
		for _, st := range statements(r) {
			for _, a := range oneOrMany(st["Action"]) {
				if a == "xray:PutSpans" || a == "xray:PutSpansForIndexing" {
					t.Errorf("%s statement %v grants %v outside XRayTracesPolicy", name, st["Sid"], a)
				}
			}
		}
	}
}
