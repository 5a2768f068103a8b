package template

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/vault"
)

// emittedMetrics are the metrics in namespace mcpfn the functions write
// (their code's metric name constants), each with the dimension set it is
// written with.
var emittedMetrics = map[string]string{
	runner.MetricWorkItems: "Function", runner.MetricNotStarted: "Function", runner.MetricDuration: "Function",
	runner.MetricResponseBytes: "Function", runner.MetricColdStart: "Function", runner.MetricFailures: "Function,ErrorType",
	runner.MetricOperationDuration: "Function,Method,Outcome",
	schedule.MetricDue:             "Function", schedule.MetricEnqueued: "Function", schedule.MetricBackingOff: "Function",
	schedule.MetricUnanswered: "Function", schedule.MetricOverdue3x: "Function", schedule.MetricStaleRequest: "Function",
	vault.MetricOAuthRefreshes: "Function", vault.MetricOAuthRefreshFailures: "Function",
}

type widget struct {
	Type       string `json:"type"`
	Properties struct {
		Title   string  `json:"title"`
		Metrics [][]any `json:"metrics"`
		Query   string  `json:"query"`
		Alarms  []string
	} `json:"properties"`
}

// TestDashboardNamesEmittedMetrics: the dashboard's body is JSON whose
// references are the template's resources; every mcpfn metric it shows is
// one the functions emit (or a log group's metric filter makes), with the
// dimensions it is emitted with; its SQS metrics are of the template's
// queues; its alarm widget lists every alarm; and it shows what
// docs/operations.md promises.
func TestDashboardNamesEmittedMetrics(t *testing.T) {
	d := realTemplate(t)
	emitted := maps.Clone(emittedMetrics)
	for _, f := range d.resources("AWS::Logs::MetricFilter") {
		for _, tr := range asSlice(path(f, "Properties", "MetricTransformations")) {
			if path(tr, "MetricNamespace") == runner.Namespace {
				emitted[path(tr, "MetricName").(string)] = ""
			}
		}
	}
	body, ok := path(d, "Resources", "Dashboard", "Properties", "DashboardBody", "Fn::Sub").(string)
	if !ok || path(d, "Resources", "Dashboard", "Type") != "AWS::CloudWatch::Dashboard" {
		t.Fatal("no AWS::CloudWatch::Dashboard named Dashboard with a !Sub body")
	}
	rs, _ := d["Resources"].(map[string]any)
	refs := regexp.MustCompile(`\$\{([A-Za-z0-9:]+)(\.[A-Za-z]+)?\}`)
	body = refs.ReplaceAllStringFunc(body, func(m string) string {
		name := refs.FindStringSubmatch(m)[1]
		if rs[name] == nil && !strings.HasPrefix(name, "AWS::") {
			t.Errorf("dashboard refers to %s, not a resource of the template", m)
		}
		return "ref:" + strings.Trim(m, "${}")
	})
	var dash struct{ Widgets []widget }
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("dashboard body is not JSON: %v", err)
	}
	queues := d.resources("AWS::SQS::Queue")
	search := regexp.MustCompile(`^SEARCH\('\{mcpfn,([A-Za-z,]+)\} MetricName="([^"]+)"', '(\w+)'`)
	shown := map[string]bool{}
	var alarms []string
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) == 1 {
				expr, _ := path(m[0], "expression").(string)
				g := search.FindStringSubmatch(expr)
				if g == nil {
					t.Errorf("%s: expression %q is not a SEARCH of an mcpfn metric", w.Properties.Title, expr)
					continue
				}
				if dims, ok := emitted[g[2]]; !ok || dims != g[1] {
					t.Errorf("%s: %s by %s is not a metric the functions emit (by %q)", w.Properties.Title, g[2], g[1], dims)
				}
				shown[g[2]+" "+g[3]] = true
				continue
			}
			ns, _ := m[0].(string)
			name, _ := m[1].(string)
			var dims []string
			for i := 2; i+1 < len(m); i += 2 {
				dims = append(dims, m[i].(string))
			}
			switch ns {
			case runner.Namespace:
				if want, ok := emitted[name]; !ok || strings.Join(dims, ",") != want {
					t.Errorf("%s: %s by %v is not a metric the functions emit (by %q)", w.Properties.Title, name, dims, want)
				}
				if fn := m[3]; fn != "discover" && fn != "call" {
					t.Errorf("%s: %s of Function %v", w.Properties.Title, name, fn)
				}
			case "AWS/SQS":
				q, _ := m[3].(string)
				q = strings.TrimSuffix(strings.TrimPrefix(q, "ref:"), ".QueueName")
				if !slices.Contains([]string{"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"}, name) || queues[q] == nil {
					t.Errorf("%s: %s of %v, want a depth or age of a queue of the template", w.Properties.Title, name, m[3])
				}
				if strings.Contains(q, "DLQ") != (name == "ApproximateNumberOfMessagesVisible") {
					t.Errorf("%s: %s of %s: want DLQ depth and work queue age", w.Properties.Title, name, q)
				}
			default:
				t.Errorf("%s: namespace %q", w.Properties.Title, ns)
			}
			shown[name] = true
		}
		if w.Type == "log" && !(strings.Contains(w.Properties.Query, "outcome") && strings.Contains(w.Properties.Query, "error_type")) {
			t.Errorf("%s: query %q does not count work items by outcome and error type", w.Properties.Title, w.Properties.Query)
		}
		if w.Type == "log" {
			shown["outcome"] = true
		}
		alarms = append(alarms, w.Properties.Alarms...)
	}
	for _, want := range []string{runner.MetricWorkItems, runner.MetricFailures + " Sum", "outcome", runner.MetricOperationDuration + " p50",
		runner.MetricOperationDuration + " p99", "ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
		schedule.MetricOverdue3x, vault.MetricOAuthRefreshes, vault.MetricOAuthRefreshFailures} {
		if !shown[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	var wantAlarms []string
	for name := range d.resources("AWS::CloudWatch::Alarm") {
		wantAlarms = append(wantAlarms, "ref:"+name+".Arn")
	}
	slices.Sort(wantAlarms)
	slices.Sort(alarms)
	if diff := cmp.Diff(wantAlarms, alarms); diff != "" {
		t.Errorf("alarm widget (-every alarm +listed):\n%s", diff)
	}
}
