package template

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
			if !strings.HasSuffix(k, "FunctionArn") {
				continue // a queue or a parameter (CallStateMachine's input requests and bounds)
			}
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
	retained := []string{"DiscoverDLQ", "CallDLQ", "InputRequestsDLQ"}
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
		"InputRequestsQueueUrl":      ref("InputRequestsQueue"),
		"InputRequestsQueueArn":      getAtt("InputRequestsQueue", "Arn"),
		"InputRequestsDLQUrl":        ref("InputRequestsDLQ"),
		"InputRequestsDLQArn":        getAtt("InputRequestsDLQ", "Arn"),
		"DiscoverStateMachineArn":    ref("DiscoverStateMachine"),
		"CallStateMachineArn":        ref("CallStateMachine"),
		"CallExpressStateMachineArn": ref("CallExpressStateMachine"),
		"CatalogTableName":           ref("CatalogTable"),
		"CallsTableName":             ref("CallsTable"),
		"AuditTableName":             ref("AuditTable"),
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
	if slots := slotsAt(mb); slots < int(batch) {
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
	"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey",
	"lambda:InvokeFunction",
	"logs:CreateLogDelivery", "logs:CreateLogStream", "logs:DeleteLogDelivery", "logs:DescribeLogGroups", "logs:DescribeResourcePolicies",
	"logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutLogEvents", "logs:PutResourcePolicy", "logs:UpdateLogDelivery",
	"s3:PutObject",
	"secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue", "secretsmanager:UpdateSecretVersionStage",
	"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage",
	"states:SendTaskFailure", "states:SendTaskSuccess",
	"sts:AssumeRole",
	"xray:PutSpans", "xray:PutSpansForIndexing",
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

// TestExpressCallMachineMatchesStandard: the two call machines invoke the
// function alike: CallTool (and the Standard machine's AnswerTool, which
// adds the input responses) have the same retries and catches, and Done and
// CallFailed are the same. They differ in the key Prepare sets, and in what
// follows a pending answer: the Standard machine loops, the Express one
// hands over (docs/contract.md).
func TestExpressCallMachineMatchesStandard(t *testing.T) {
	load := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join(root, "statemachine", name))
		if err != nil {
			t.Fatal(err)
		}
		var def map[string]any
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatal(err)
		}
		for _, st := range path(def, "States").(map[string]any) {
			delete(st.(map[string]any), "Comment")
		}
		return def
	}
	std, express := load("call.asl.json"), load("call-express.asl.json")
	for _, state := range []string{"CallTool", "Done", "CallFailed"} {
		if diff := cmp.Diff(path(std, "States", state), path(express, "States", state)); diff != "" {
			t.Errorf("%s differs (-standard +express):\n%s", state, diff)
		}
	}
	answer := maps.Clone(path(std, "States", "AnswerTool").(map[string]any))
	answer["Parameters"] = path(std, "States", "CallTool", "Parameters")
	if diff := cmp.Diff(path(std, "States", "CallTool"), answer); diff != "" {
		t.Errorf("AnswerTool differs from CallTool beyond its payload (-CallTool +AnswerTool):\n%s", diff)
	}
	if path(express, "States", "HandOver") == nil || path(std, "States", "Poll") == nil {
		t.Errorf("the Standard machine must loop (Poll) and the Express one hand over (HandOver)")
	}
}
