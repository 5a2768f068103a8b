package template

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// metricOf is one metric an alarm reads: namespace, name and dimensions
// (name → the dimension value as the template writes it, decoded).
type metricOf struct {
	Namespace, Name string
	Dimensions      map[string]any
}

// alarmMetrics returns the metrics an alarm reads, from its single metric or
// from the MetricStat entries of its metric math.
func alarmMetrics(props any) []metricOf {
	dims := func(list any) map[string]any {
		m := map[string]any{}
		for _, d := range asSlice(list) {
			m[path(d, "Name").(string)] = path(d, "Value")
		}
		return m
	}
	if ns, ok := path(props, "Namespace").(string); ok {
		return []metricOf{{ns, path(props, "MetricName").(string), dims(path(props, "Dimensions"))}}
	}
	var out []metricOf
	for _, q := range asSlice(path(props, "Metrics")) {
		if m := path(q, "MetricStat", "Metric"); m != nil {
			out = append(out, metricOf{path(m, "Namespace").(string), path(m, "MetricName").(string), dims(path(m, "Dimensions"))})
		}
	}
	return out
}

func ref(id string) map[string]any          { return map[string]any{"Ref": id} }
func getAtt(id, attr string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }

// TestAlarms checks what each alarm watches, that it notifies AlarmTopicArn,
// treats missing data explicitly, and has a runbook in docs/operations.md.
func TestAlarms(t *testing.T) {
	d := realTemplate(t)
	internal := string(wire.Internal)
	want := map[string][]metricOf{
		"DiscoverDLQAlarm":           {{"AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"QueueName": getAtt("DiscoverDLQ", "QueueName")}}},
		"CallDLQAlarm":               {{"AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"QueueName": getAtt("CallDLQ", "QueueName")}}},
		"DiscoverQueueAgeAlarm":      {{"AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]any{"QueueName": getAtt("DiscoverQueue", "QueueName")}}},
		"CallQueueAgeAlarm":          {{"AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]any{"QueueName": getAtt("CallQueue", "QueueName")}}},
		"InputRequestsDLQAlarm":      {{"AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"QueueName": getAtt("InputRequestsDLQ", "QueueName")}}},
		"InputRequestsQueueAgeAlarm": {{"AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]any{"QueueName": getAtt("InputRequestsQueue", "QueueName")}}},
		"ConfigurationErrorsAlarm":   {{runner.Namespace, "ConfigurationErrors", map[string]any{}}},
		"CatalogsOverdueAlarm":       {{runner.Namespace, "SweepOverdue3x", map[string]any{"Function": "discover"}}},
		"SweepScheduleErrorsAlarm": {
			{"AWS/Scheduler", "TargetErrorCount", map[string]any{"ScheduleGroup": ref("SweepScheduleGroup")}},
			{"AWS/Scheduler", "InvocationDroppedCount", map[string]any{"ScheduleGroup": ref("SweepScheduleGroup")}},
		},
		"CatalogTableThrottlesAlarm": {
			{"AWS/DynamoDB", "ReadThrottleEvents", map[string]any{"TableName": ref("CatalogTable")}},
			{"AWS/DynamoDB", "WriteThrottleEvents", map[string]any{"TableName": ref("CatalogTable")}},
			{"AWS/DynamoDB", "WriteThrottleEvents", map[string]any{"TableName": ref("CatalogTable"), "GlobalSecondaryIndexName": "due"}},
		},
		"CallsTableThrottlesAlarm": {
			{"AWS/DynamoDB", "ReadThrottleEvents", map[string]any{"TableName": ref("CallsTable")}},
			{"AWS/DynamoDB", "WriteThrottleEvents", map[string]any{"TableName": ref("CallsTable")}},
		},
	}
	for fn, label := range map[string]string{"DiscoverFunction": "discover", "CallFunction": "call"} {
		prefix := strings.TrimSuffix(fn, "Function")
		name := map[string]any{"FunctionName": ref(fn)}
		want[prefix+"ErrorsAlarm"] = []metricOf{{"AWS/Lambda", "Errors", name}}
		want[prefix+"ThrottlesAlarm"] = []metricOf{{"AWS/Lambda", "Throttles", name}}
		want[prefix+"DurationAlarm"] = []metricOf{{"AWS/Lambda", "Duration", name}}
		want[prefix+"InternalErrorRateAlarm"] = []metricOf{
			{runner.Namespace, "Failures", map[string]any{"Function": label, "ErrorType": internal}},
			{runner.Namespace, "WorkItems", map[string]any{"Function": label}},
		}
	}
	for _, sm := range []string{"DiscoverStateMachine", "CallStateMachine", "CallExpressStateMachine"} {
		arn := map[string]any{"StateMachineArn": ref(sm)}
		want[sm+"FailedAlarm"] = []metricOf{{"AWS/States", "ExecutionsFailed", arn}}
		want[sm+"TimedOutAlarm"] = []metricOf{{"AWS/States", "ExecutionsTimedOut", arn}}
	}

	alarms := d.resources("AWS::CloudWatch::Alarm")
	if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(alarms))); diff != "" {
		t.Errorf("alarms (-want +got):\n%s", diff)
	}
	runbooks, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	notify := map[string]any{"Fn::If": []any{"HasAlarmTopic", []any{ref("AlarmTopicArn")}, ref("AWS::NoValue")}}
	for name, a := range alarms {
		props := path(a, "Properties")
		if diff := cmp.Diff(want[name], alarmMetrics(props)); diff != "" {
			t.Errorf("%s metrics (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(notify, path(props, "AlarmActions")); diff != "" {
			t.Errorf("%s AlarmActions (-want +got):\n%s", name, diff)
		}
		if m := path(props, "TreatMissingData"); m != "notBreaching" && name != "CatalogsOverdueAlarm" {
			t.Errorf("%s TreatMissingData %v, want notBreaching: no data is no trouble", name, m)
		}
		if !slices.ContainsFunc(strings.Split(string(runbooks), "\n"), func(l string) bool {
			return strings.HasPrefix(l, "### ") && strings.Contains(l, "`"+name+"`")
		}) {
			t.Errorf("%s has no runbook (a \"### \" heading naming `%s` in docs/operations.md)", name, name)
		}
	}
}

// TestDurationAlarmsFireAt80PercentOfTheTimeout: the p99 duration alarms'
// threshold is 80 % of the function timeout, in milliseconds.
func TestDurationAlarmsFireAt80PercentOfTheTimeout(t *testing.T) {
	d := realTemplate(t)
	timeout, _ := d.number(path(d, "Globals", "Function", "Timeout"), atDefault)
	for _, name := range []string{"DiscoverDurationAlarm", "CallDurationAlarm"} {
		props := path(d, "Resources", name, "Properties")
		threshold, err := d.number(path(props, "Threshold"), atDefault)
		if err != nil || threshold != 0.8*timeout*1000 {
			t.Errorf("%s threshold %v ms (%v), want 80 %% of the %v s timeout", name, threshold, err, timeout)
		}
		if s := path(props, "ExtendedStatistic"); s != "p99" {
			t.Errorf("%s statistic %v, want p99", name, s)
		}
	}
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours)\)$`)

// TestOverdueAlarmFollowsSweepRate: for every SweepRate, the overdue alarm's
// period is the sweep interval, so each period holds one sweep's report;
// its evaluation window fits CloudWatch's day; it needs more than one
// breaching period, so one sweep that slips across a period boundary
// (a period without data, which breaches) does not raise it.
func TestOverdueAlarmFollowsSweepRate(t *testing.T) {
	d := realTemplate(t)
	props := path(d, "Resources", "CatalogsOverdueAlarm", "Properties")
	evals, _ := d.number(path(props, "EvaluationPeriods"), atDefault)
	toAlarm, _ := d.number(path(props, "DatapointsToAlarm"), atDefault)
	if toAlarm < 2 || toAlarm > evals {
		t.Errorf("DatapointsToAlarm %v of %v, want at least 2", toAlarm, evals)
	}
	if m := path(props, "TreatMissingData"); m != "breaching" {
		t.Errorf("TreatMissingData %v, want breaching: no sweep report means no sweep", m)
	}
	rates := asSlice(path(d, "Parameters", "SweepRate", "AllowedValues"))
	if len(rates) == 0 || !slices.Contains(rates, path(d, "Parameters", "SweepRate", "Default")) {
		t.Fatalf("SweepRate allows %v, want a list holding the default", rates)
	}
	for _, r := range rates {
		m := rateExpr.FindStringSubmatch(r.(string))
		if m == nil {
			t.Errorf("SweepRate value %q is not rate(N minute[s]|hour[s])", r)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		want := n * 60
		if strings.HasPrefix(m[2], "hour") {
			want = n * 3600
		}
		got, err := d.evaluate(path(props, "Period"), map[string]any{"SweepRate": r})
		if err != nil || got != want {
			t.Errorf("SweepRate %s: period %v (%v), want %d s", r, got, err, want)
		}
		if float64(want)*evals > 86400 {
			t.Errorf("SweepRate %s: %v periods of %d s exceed CloudWatch's one-day window", r, evals, want)
		}
	}
}

// evaluate resolves Fn::If over conditions made of Fn::Equals of a
// parameter and a literal, with params' values; numbers come back as int.
func (d doc) evaluate(v any, params map[string]any) (any, error) {
	args := asSlice(path(v, "Fn::If"))
	if len(args) != 3 {
		if f, ok := v.(float64); ok {
			return int(f), nil
		}
		return v, nil
	}
	cond := asSlice(path(d, "Conditions", args[0].(string), "Fn::Equals"))
	if len(cond) != 2 {
		return nil, fmt.Errorf("condition %v is not Fn::Equals of two values", args[0])
	}
	p, _ := path(cond[0], "Ref").(string)
	if _, ok := params[p]; !ok {
		return nil, fmt.Errorf("condition %v compares %v, not a given parameter", args[0], cond[0])
	}
	if params[p] == cond[1] {
		return d.evaluate(args[1], params)
	}
	return d.evaluate(args[2], params)
}

// TestConfigurationErrorsBecomeAMetric: each function log group has a
// metric filter turning the init failure's JSON line into the metric
// ConfigurationErrorsAlarm watches.
func TestConfigurationErrorsBecomeAMetric(t *testing.T) {
	d := realTemplate(t)
	groups := map[string]bool{}
	for name, f := range d.resources("AWS::Logs::MetricFilter") {
		props := path(f, "Properties")
		id, _, _ := refName(path(props, "LogGroupName"))
		groups[id] = true
		if p := path(props, "FilterPattern"); p != `{ $.error_type = "configuration_error" }` {
			t.Errorf("%s pattern %v, want the configuration_error JSON line", name, p)
		}
		got := asSlice(path(props, "MetricTransformations"))
		if len(got) != 1 || path(got[0], "MetricNamespace") != runner.Namespace || path(got[0], "MetricName") != "ConfigurationErrors" {
			t.Errorf("%s transforms to %v, want %s/ConfigurationErrors", name, got, runner.Namespace)
		}
	}
	for _, fn := range []string{"DiscoverFunction", "CallFunction"} {
		lg, _, _ := refName(path(d, "Resources", fn, "Properties", "LoggingConfig", "LogGroup"))
		if !groups[lg] {
			t.Errorf("%s logs to %q, which has no configuration_error filter", fn, lg)
		}
	}
}
