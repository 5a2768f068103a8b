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
	"github.com/mcpfn/mcpfn/shared/startup"
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
		"DiscoverDLQAlarm":         {{"AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"QueueName": getAtt("DiscoverDLQ", "QueueName")}}},
		"CallDLQAlarm":             {{"AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"QueueName": getAtt("CallDLQ", "QueueName")}}},
		"DiscoverQueueAgeAlarm":    {{"AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]any{"QueueName": getAtt("DiscoverQueue", "QueueName")}}},
		"CallQueueAgeAlarm":        {{"AWS/SQS", "ApproximateAgeOfOldestMessage", map[string]any{"QueueName": getAtt("CallQueue", "QueueName")}}},
		"ConfigurationErrorsAlarm": {{runner.Namespace, "ConfigurationErrors", map[string]any{}}},
		"CatalogsOverdueAlarm":     {{runner.Namespace, "SweepOverdue3x", map[string]any{"Function": "discover"}}},
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

// TestGradualDeployment: both functions publish the alias live, roll out
// by canary, and roll back on their error alarms; everything that invokes a
// function invokes the alias.
func TestGradualDeployment(t *testing.T) {
	d := realTemplate(t)
	if a := path(d, "Globals", "Function", "AutoPublishAlias"); a != "live" {
		t.Errorf("AutoPublishAlias %v, want live", a)
	}
	for _, fn := range []string{"Discover", "Call"} {
		pref := path(d, "Resources", fn+"Function", "Properties", "DeploymentPreference")
		if ty, _ := path(pref, "Type").(string); !strings.HasPrefix(ty, "Canary") {
			t.Errorf("%sFunction deploys by %v, want a canary", fn, ty)
		}
		var got []string
		for _, a := range asSlice(path(pref, "Alarms")) {
			id, _, _ := refName(a)
			got = append(got, id)
		}
		want := []string{"ConfigurationErrorsAlarm", fn + "ErrorsAlarm", fn + "InternalErrorRateAlarm"}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%sFunction rollback alarms (-want +got):\n%s", fn, diff)
		}
	}
	for name, sm := range d.resources("AWS::Serverless::StateMachine") {
		for k, v := range path(sm, "Properties", "DefinitionSubstitutions").(map[string]any) {
			if id, _, _ := refName(v); !strings.HasSuffix(id, "Function.Alias") {
				t.Errorf("%s substitutes %s = %v, want !Ref <function>.Alias", name, k, v)
			}
		}
	}
}

// TestHygiene: DLQs and log groups outlive the stack; tables refuse
// deletion; state machines log errors without execution data to a log
// group of the template, and trace.
func TestHygiene(t *testing.T) {
	d := realTemplate(t)
	retained := []string{"DiscoverDLQ", "CallDLQ"}
	retained = slices.AppendSeq(retained, maps.Keys(d.resources("AWS::Logs::LogGroup")))
	for _, name := range retained {
		r := path(d, "Resources", name)
		if path(r, "DeletionPolicy") != "Retain" || path(r, "UpdateReplacePolicy") != "Retain" {
			t.Errorf("%s: DeletionPolicy and UpdateReplacePolicy must be Retain", name)
		}
	}
	for name, tb := range d.resources("AWS::DynamoDB::Table") {
		if path(tb, "Properties", "DeletionProtectionEnabled") != true {
			t.Errorf("%s: DeletionProtectionEnabled must be true", name)
		}
	}
	groups := d.resources("AWS::Logs::LogGroup")
	for name, sm := range d.resources("AWS::Serverless::StateMachine") {
		props := path(sm, "Properties")
		if path(props, "Tracing", "Enabled") != true {
			t.Errorf("%s: Tracing.Enabled must be true", name)
		}
		logging := path(props, "Logging")
		if path(logging, "IncludeExecutionData") != false || path(logging, "Level") == nil {
			t.Errorf("%s: Logging %v, want a level and IncludeExecutionData false (requests carry server URLs)", name, logging)
		}
		dest := asSlice(path(logging, "Destinations"))
		var id, attr string
		if len(dest) == 1 {
			id, attr, _ = refName(path(dest[0], "CloudWatchLogsLogGroup", "LogGroupArn"))
		}
		if groups[id] == nil || attr != "Arn" {
			t.Errorf("%s: Logging.Destinations %v, want one log group of this template", name, dest)
		}
	}
	if ty := path(d, "Resources", "CallExpressStateMachine", "Properties", "Type"); ty != "EXPRESS" {
		t.Errorf("CallExpressStateMachine Type %v, want EXPRESS", ty)
	}
}

// TestSecretsKmsKey: with SecretsKmsKeyArn set, each role may decrypt with
// the key and generate data keys (the token write-back), through Secrets
// Manager only; empty (the default) grants nothing.
func TestSecretsKmsKey(t *testing.T) {
	d := realTemplate(t)
	if def := path(d, "Parameters", "SecretsKmsKeyArn", "Default"); def != "" {
		t.Errorf("SecretsKmsKeyArn default %v, want empty (the AWS managed key)", def)
	}
	want := map[string]any{
		"Sid": "SecretsKey", "Effect": "Allow",
		"Action":   []any{"kms:Decrypt", "kms:GenerateDataKey"},
		"Resource": ref("SecretsKmsKeyArn"),
		"Condition": map[string]any{"StringEquals": map[string]any{
			"kms:ViaService": map[string]any{"Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"},
		}},
	}
	for _, role := range []string{"DiscoverRole", "CallRole"} {
		if diff := cmp.Diff(want, statement(d, role, "SecretsKey")); diff != "" {
			t.Errorf("%s SecretsKey (-want +got):\n%s", role, diff)
		}
		found := false
		for _, pol := range asSlice(path(d, "Resources", role, "Properties", "Policies")) {
			for _, st := range asSlice(path(pol, "PolicyDocument", "Statement")) {
				if args := asSlice(path(st, "Fn::If")); len(args) == 3 && path(args[1], "Sid") == "SecretsKey" {
					found = args[0] == "HasSecretsKmsKey" && cmp.Equal(args[2], ref("AWS::NoValue"))
				}
			}
		}
		if !found {
			t.Errorf("%s: SecretsKey must be granted only under HasSecretsKmsKey", role)
		}
	}
	if c := path(d, "Conditions", "HasSecretsKmsKey"); !jsonContains(c, `"Ref":"SecretsKmsKeyArn"`) {
		t.Errorf("HasSecretsKmsKey %v does not test SecretsKmsKeyArn", c)
	}
}

// TestOutputs: what the runbooks and the DLQ replay read from the stack.
func TestOutputs(t *testing.T) {
	d := realTemplate(t)
	want := map[string]any{
		"DiscoverFunctionArn":        getAtt("DiscoverFunction", "Arn"),
		"CallFunctionArn":            getAtt("CallFunction", "Arn"),
		"DiscoverQueueUrl":           ref("DiscoverQueue"),
		"CallQueueUrl":               ref("CallQueue"),
		"DiscoverQueueArn":           getAtt("DiscoverQueue", "Arn"),
		"CallQueueArn":               getAtt("CallQueue", "Arn"),
		"DiscoverDLQUrl":             ref("DiscoverDLQ"),
		"DiscoverDLQArn":             getAtt("DiscoverDLQ", "Arn"),
		"CallDLQUrl":                 ref("CallDLQ"),
		"CallDLQArn":                 getAtt("CallDLQ", "Arn"),
		"DiscoverStateMachineArn":    ref("DiscoverStateMachine"),
		"CallStateMachineArn":        ref("CallStateMachine"),
		"CallExpressStateMachineArn": ref("CallExpressStateMachine"),
		"CatalogTableName":           ref("CatalogTable"),
		"CallsTableName":             ref("CallsTable"),
	}
	got := map[string]any{}
	for name, o := range path(d, "Outputs").(map[string]any) {
		got[name] = path(o, "Value")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Outputs (-want +got):\n%s", diff)
	}
}

// TestMemorySizeGivesEveryRecordASlot: MemorySize is a parameter whose
// default gives every record of a default batch its own work slot.
func TestMemorySizeGivesEveryRecordASlot(t *testing.T) {
	d := realTemplate(t)
	if id, _, _ := refName(path(d, "Globals", "Function", "MemorySize")); id != "MemorySize" {
		t.Fatalf("Globals MemorySize %v, want !Ref MemorySize", path(d, "Globals", "Function", "MemorySize"))
	}
	mb, err := d.number(ref("MemorySize"), atDefault)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := d.number(path(d, "Mappings", "Budgets", "Queue", "BatchSize"), atDefault)
	if err != nil {
		t.Fatal(err)
	}
	if slots := startup.PlanMemory(int(mb)).Slots(); slots < int(batch) {
		t.Errorf("MemorySize default %v MB gives %d slots, want at least the batch size %v", mb, slots, batch)
	}
	if lo, hi := path(d, "Parameters", "MemorySize", "MinValue"), path(d, "Parameters", "MemorySize", "MaxValue"); lo != 128 || hi != 10240 {
		t.Errorf("MemorySize allows %v-%v, want Lambda's 128-10240", lo, hi)
	}
}

// iamActions are the IAM actions the template may grant, each checked
// against the Service Authorization Reference (2026-12). A batch API such
// as SendMessageBatch is no action: its single form authorizes it.
var iamActions = []string{
	"dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem",
	"kms:Decrypt", "kms:GenerateDataKey",
	"lambda:InvokeFunction",
	"logs:CreateLogDelivery", "logs:CreateLogStream", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies",
	"logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutLogEvents", "logs:PutResourcePolicy", "logs:UpdateLogDelivery",
	"s3:PutObject",
	"secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue", "secretsmanager:UpdateSecretVersionStage",
	"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage",
	"states:SendTaskFailure", "states:SendTaskSuccess",
	"sts:AssumeRole",
	"xray:GetSamplingRules", "xray:GetSamplingTargets", "xray:PutTelemetryRecords", "xray:PutTraceSegments",
}

// TestOnlyValidIAMActions: every action in every policy is a real IAM action.
func TestOnlyValidIAMActions(t *testing.T) {
	d := realTemplate(t)
	rs, _ := d["Resources"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(rs)) {
		sts := statements(rs[name])
		for _, st := range asSlice(path(rs[name], "Properties", "AssumeRolePolicyDocument", "Statement")) {
			sts = append(sts, branches(st)...)
		}
		for _, st := range sts {
			for _, a := range oneOrMany(st["Action"]) {
				if !slices.Contains(iamActions, a.(string)) {
					t.Errorf("%s statement %v: %v is not a known IAM action", name, st["Sid"], a)
				}
			}
		}
	}
}
