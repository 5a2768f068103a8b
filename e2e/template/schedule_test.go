package template

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// invoker is what EventBridge Scheduler does with its role: the one
// operation the sweep's role grants.
type invoker interface {
	InvokeFunction(ctx context.Context) error
}

// TestSweepIsScheduled checks the sweep's wiring: a Scheduler schedule
// invoking discover with the sample sweep event under a role that may
// invoke discover alone, the discover queue in both functions'
// environment, the due index ARN the sweep queries, and the alarm on the
// metric the sweep writes.
func TestSweepIsScheduled(t *testing.T) {
	d := realTemplate(t)
	schedules := d.resources("AWS::Scheduler::Schedule")
	sched := schedules["SweepSchedule"]
	if len(schedules) != 1 || sched == nil {
		t.Fatalf("schedules %v, want SweepSchedule alone", schedules)
	}
	target := path(sched, "Properties", "Target")
	if id, attr, _ := refName(path(target, "Arn")); id != "DiscoverFunction.Alias" || attr != "" {
		t.Errorf("target %v, want !Ref DiscoverFunction.Alias (the live alias)", path(target, "Arn"))
	}
	if id, attr, _ := refName(path(target, "RoleArn")); id != "SweepSchedulerRole" || attr != "Arn" {
		t.Errorf("role %v, want !GetAtt SweepSchedulerRole.Arn", path(target, "RoleArn"))
	}
	sample, err := os.ReadFile(filepath.Join(root, "events", "discover-sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	input, _ := path(target, "Input").(string)
	var got, want any
	if err := json.Unmarshal([]byte(input), &got); err != nil {
		t.Fatalf("Input %q: %v", input, err)
	}
	if err := json.Unmarshal(sample, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Input is not events/discover-sweep.json (-want +got):\n%s", diff)
	}
	if principal := path(d, "Resources", "SweepSchedulerRole", "Properties", "AssumeRolePolicyDocument", "Statement"); !jsonContains(principal, "scheduler.amazonaws.com") {
		t.Errorf("SweepSchedulerRole trusts %v, want scheduler.amazonaws.com", principal)
	}
	if sts := statements(path(d, "Resources", "SweepSchedulerRole")); len(sts) != 1 {
		t.Errorf("SweepSchedulerRole has %d statements, want InvokeDiscover alone", len(sts))
	}

	if id, _, _ := refName(path(d, "Globals", "Function", "Environment", "Variables", startup.EnvDiscoverQueueURL)); id != "DiscoverQueue" {
		t.Errorf("Globals %s = %v, want !Ref DiscoverQueue for both functions", startup.EnvDiscoverQueueURL, path(d, "Globals", "Function", "Environment", "Variables", startup.EnvDiscoverQueueURL))
	}
	for name, fn := range d.resources("AWS::Serverless::Function") {
		if v := path(fn, "Properties", "Environment", "Variables", startup.EnvDiscoverQueueURL); v != nil {
			t.Errorf("function %s overrides %s with %v", name, startup.EnvDiscoverQueueURL, v)
		}
	}

	if sub, _ := path(statement(d, "DiscoverRole", "DueIndex"), "Resource", "Fn::Sub").(string); sub != "${CatalogTable.Arn}/index/"+catalog.DueIndex {
		t.Errorf("DueIndex resource %q, want the due index of CatalogTable", sub)
	}

	alarm := path(d, "Resources", "CatalogsOverdueAlarm", "Properties")
	gotAlarm := map[string]any{
		"Namespace":  path(alarm, "Namespace"),
		"MetricName": path(alarm, "MetricName"),
		"Function":   path(asSlice(path(alarm, "Dimensions"))[0], "Value"),
		"Missing":    path(alarm, "TreatMissingData"),
	}
	wantAlarm := map[string]any{"Namespace": runner.Namespace, "MetricName": schedule.MetricOverdue3x, "Function": "discover", "Missing": "breaching"}
	if diff := cmp.Diff(wantAlarm, gotAlarm); diff != "" {
		t.Errorf("CatalogsOverdueAlarm (-want +got):\n%s", diff)
	}
}

// jsonContains reports whether v, marshalled, holds s.
func jsonContains(v any, s string) bool {
	b, _ := json.Marshal(v)
	return strings.Contains(string(b), s)
}
