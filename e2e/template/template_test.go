// Package template checks template.yaml and the state machines it references
// against the budget and reliability rules of ARCHITECTURE.md. It needs no AWS
// and no external tool.
package template

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const root = "../.."

func TestTemplateHoldsBudgetsAndDLQRules(t *testing.T) {
	d, err := loadTemplate(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := check(d, root); len(got) != 0 {
		t.Errorf("template.yaml breaks %d rules:\n%s", len(got), strings.Join(got, "\n"))
	}
	// The checks must have seen what they check: an empty template passes too.
	for typ, min := range map[string]int{
		"AWS::Serverless::Function":     2,
		"AWS::SQS::Queue":               4,
		"AWS::DynamoDB::Table":          2,
		"AWS::Serverless::StateMachine": 2,
		"AWS::IAM::Role":                2,
	} {
		if n := len(d.resources(typ)); n < min {
			t.Errorf("template.yaml has %d %s, want at least %d", n, typ, min)
		}
	}
}

func TestShortFormIntrinsics(t *testing.T) {
	d, err := parseTemplate([]byte(`
A: !Ref Param
B: !GetAtt Queue.Arn
C: !Sub "${X}s"
D: !FindInMap [M, K, V]
E: !If [Cond, [!Ref T], !Ref AWS::NoValue]
F: 180
`))
	if err != nil {
		t.Fatal(err)
	}
	want := doc{
		"A": map[string]any{"Ref": "Param"},
		"B": map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}},
		"C": map[string]any{"Fn::Sub": "${X}s"},
		"D": map[string]any{"Fn::FindInMap": []any{"M", "K", "V"}},
		"E": map[string]any{"Fn::If": []any{"Cond", []any{map[string]any{"Ref": "T"}}, map[string]any{"Ref": "AWS::NoValue"}}},
		"F": 180,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("parse (-want +got):\n%s", diff)
	}
}

// TestCheckCatchesBrokenTemplates breaks the real template one rule at a time
// and expects check to name the broken rule.
func TestCheckCatchesBrokenTemplates(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set := func(d doc, v any, keys ...string) {
		m := path(d, keys[:len(keys)-1]...).(map[string]any)
		m[keys[len(keys)-1]] = v
	}
	del := func(d doc, keys ...string) {
		m := path(d, keys[:len(keys)-1]...).(map[string]any)
		delete(m, keys[len(keys)-1])
	}
	tests := []struct {
		name   string
		mutate func(doc)
		want   string
	}{
		{
			name:   "visibility just under 6x timeout",
			mutate: func(d doc) { set(d, 1079, "Mappings", "Budgets", "Queue", "VisibilityTimeoutSeconds") },
			want:   "visibility timeout 1079s must be at least 6 x function",
		},
		{
			name:   "largest reserve reaches the timeout",
			mutate: func(d doc) { set(d, 60, "Parameters", "ReserveSeconds", "MaxValue") },
			want:   "must exceed operation timeout 2m0s + largest reserve 1m0s",
		},
		{
			name:   "batch concurrency above the batch size",
			mutate: func(d doc) { set(d, 11, "Parameters", "BatchConcurrency", "MaxValue") },
			want:   "the largest MCPFN_BATCH_CONCURRENCY 11 must not exceed BatchSize 10",
		},
		{
			name:   "unbounded reserve parameter",
			mutate: func(d doc) { del(d, "Parameters", "ReserveSeconds", "MaxValue") },
			want:   "a Number in a budget needs a MaxValue",
		},
		{
			name:   "operation timeout missing",
			mutate: func(d doc) { del(d, "Globals", "Function", "Environment", "Variables", "MCPFN_OPERATION_TIMEOUT") },
			want:   "MCPFN_OPERATION_TIMEOUT is not set",
		},
		{
			name:   "queue without DLQ",
			mutate: func(d doc) { del(d, "Resources", "CallQueue", "Properties", "RedrivePolicy") },
			want:   "queue CallQueue: has no DLQ",
		},
		{
			name:   "redrive without maxReceiveCount",
			mutate: func(d doc) { del(d, "Resources", "DiscoverQueue", "Properties", "RedrivePolicy", "maxReceiveCount") },
			want:   "queue DiscoverQueue: RedrivePolicy needs maxReceiveCount",
		},
		{
			name:   "DLQ keeps messages no longer than its source",
			mutate: func(d doc) { set(d, 345600, "Resources", "CallDLQ", "Properties", "MessageRetentionPeriod") },
			want:   "queue CallDLQ: DLQ retention 345600s must exceed",
		},
		{
			name: "function reports another queue's DLQ",
			mutate: func(d doc) {
				set(d, map[string]any{"Ref": "DiscoverDLQ"}, "Resources", "CallFunction", "Properties", "Environment", "Variables", "MCPFN_DLQ_URL")
			},
			want: `MCPFN_DLQ_URL must be !Ref "CallDLQ"`,
		},
		{
			name: "no partial batch responses",
			mutate: func(d doc) {
				del(d, "Resources", "DiscoverFunction", "Properties", "Events", "Queue", "Properties", "FunctionResponseTypes")
			},
			want: "FunctionResponseTypes must contain ReportBatchItemFailures",
		},
		{
			name: "unbounded event source concurrency",
			mutate: func(d doc) {
				del(d, "Resources", "CallFunction", "Properties", "Events", "Queue", "Properties", "ScalingConfig")
			},
			want: "ScalingConfig.MaximumConcurrency must be bounded",
		},
		{
			name:   "provisioned table",
			mutate: func(d doc) { set(d, "PROVISIONED", "Resources", "CatalogTable", "Properties", "BillingMode") },
			want:   "table CatalogTable: BillingMode PROVISIONED",
		},
		{
			name:   "no point-in-time recovery",
			mutate: func(d doc) { del(d, "Resources", "CallsTable", "Properties", "PointInTimeRecoverySpecification") },
			want:   "table CallsTable: point-in-time recovery must be enabled",
		},
		{
			name:   "x86 build",
			mutate: func(d doc) { set(d, []any{"x86_64"}, "Globals", "Function", "Architectures") },
			want:   "Architectures [x86_64], want [arm64]",
		},
		{
			name: "task tokens scoped to state machines",
			mutate: func(d doc) {
				statement(d, "CallRole", "TaskTokens")["Resource"] = map[string]any{
					"Fn::Sub": "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:${AWS::StackName}-*",
				}
			},
			want: "CallRole statement TaskTokens: [states:SendTaskFailure states:SendTaskSuccess] take no resource-level scoping",
		},
		{
			name: "one task-token action scoped",
			mutate: func(d doc) {
				statement(d, "DiscoverRole", "DeadLetters")["Action"] = []any{"sqs:SendMessage", "states:SendTaskFailure"}
			},
			want: "DiscoverRole statement DeadLetters: [states:SendTaskFailure states:SendTaskSuccess] take no resource-level scoping",
		},
		{
			name: "another action on the task-token wildcard",
			mutate: func(d doc) {
				statement(d, "DiscoverRole", "TaskTokens")["Action"] = []any{"states:SendTaskSuccess", "states:SendTaskFailure", "states:StopExecution"}
			},
			want: `DiscoverRole statement TaskTokens: Resource "*" only in an Allow statement of its own`,
		},
		{
			name: "task-token wildcard beside another resource",
			mutate: func(d doc) {
				statement(d, "CallRole", "TaskTokens")["Resource"] = []any{"*", map[string]any{"Fn::GetAtt": []any{"CallDLQ", "Arn"}}}
			},
			want: `CallRole statement TaskTokens: Resource "*" only in an Allow statement of its own`,
		},
		{
			name:   "wildcard on another statement",
			mutate: func(d doc) { statement(d, "CallRole", "Logs")["Resource"] = "*" },
			want:   `CallRole statement Logs: Resource "*" only in an Allow statement of its own`,
		},
		{
			name:   "wildcard through !Sub inside an If",
			mutate: func(d doc) { statement(d, "CallRole", "Results")["Resource"] = map[string]any{"Fn::Sub": "*"} },
			want:   `CallRole statement Results: Resource "*" only in an Allow statement of its own`,
		},
		{
			name:   "action wildcard",
			mutate: func(d doc) { statement(d, "DiscoverRole", "Queue")["Action"] = "sqs:*" },
			want:   `DiscoverRole statement Queue: action wildcard "sqs:*"`,
		},
		{
			name: "NotResource",
			mutate: func(d doc) {
				st := statement(d, "CallRole", "Vaults")
				st["NotResource"] = st["Resource"]
				delete(st, "Resource")
			},
			want: "CallRole statement Vaults: NotResource is not allowed",
		},
		{
			name: "missing definition substitution",
			mutate: func(d doc) {
				del(d, "Resources", "CallStateMachine", "Properties", "DefinitionSubstitutions", "CallFunctionArn")
			},
			want: "${CallFunctionArn} has no DefinitionSubstitutions entry",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseTemplate(src)
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(d)
			got := check(d, root)
			if !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Errorf("check did not report %q; it reported:\n%s", tt.want, strings.Join(got, "\n"))
			}
		})
	}
}

// TestCheckCatchesBrokenStateMachines does the same for the ASL rules.
func TestCheckCatchesBrokenStateMachines(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want string
	}{
		{
			name: "no retry",
			def:  `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"F"}]},"F":{"Type":"Fail"}}}`,
			want: "task T: mcp_connection_failed_error is not retried",
		},
		{
			name: "retry without jitter",
			def:  `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true,"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":3,"BackoffRate":2}]}}}`,
			want: "task T: retry of internal_error needs JitterStrategy FULL",
		},
		{
			name: "terminal type retried by a wildcard",
			def:  `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true,"Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":3,"BackoffRate":2,"JitterStrategy":"FULL"}]}}}`,
			want: "task T: terminal mcp_authentication_failed_error must not be retried",
		},
		{
			name: "an init failure retried by States.TaskFailed",
			def:  `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true,"Retry":[{"ErrorEquals":["States.TaskFailed"],"MaxAttempts":3,"BackoffRate":2,"JitterStrategy":"FULL"}]}}}`,
			want: "task T: terminal Runtime.ExitError must not be retried",
		},
		{
			name: "terminal type not caught inside a Map",
			def:  `{"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true}}}}}}`,
			want: "task T: terminal invalid_request_error is not caught",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p problems
			var def map[string]any
			if err := json.Unmarshal([]byte(tt.def), &def); err != nil {
				t.Fatal(err)
			}
			p.tasks("sm", def)
			if !strings.Contains(strings.Join(p, "\n"), tt.want) {
				t.Errorf("tasks did not report %q; it reported:\n%s", tt.want, strings.Join(p, "\n"))
			}
		})
	}
}
