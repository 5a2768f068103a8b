package template

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInputRequestsQueue: CallStateMachine may send to InputRequestsQueue
// and nothing else may touch it; the machine gets the queue and both
// bounds as substitutions, and the bounds default to a day.
func TestInputRequestsQueue(t *testing.T) {
	d := realTemplate(t)
	rs := d.resources("AWS::Serverless::StateMachine")
	for _, name := range slices.Sorted(maps.Keys(rs)) {
		var sqsGrants []map[string]any
		for _, st := range statements(rs[name]) {
			for _, a := range oneOrMany(st["Action"]) {
				if s, _ := a.(string); strings.HasPrefix(s, "sqs:") {
					sqsGrants = append(sqsGrants, st)
				}
			}
		}
		if name != "CallStateMachine" {
			if len(sqsGrants) != 0 {
				t.Errorf("%s grants %v, want no SQS action", name, sqsGrants)
			}
			continue
		}
		if len(sqsGrants) != 1 || !slices.Equal(oneOrMany(sqsGrants[0]["Action"]), []any{"sqs:SendMessage"}) ||
			!cmp.Equal(sqsGrants[0]["Resource"], getAtt("InputRequestsQueue", "Arn")) {
			t.Errorf("%s SQS grants %v, want exactly sqs:SendMessage on InputRequestsQueue", name, sqsGrants)
		}
		want := map[string]any{
			"CallFunctionArn":       ref("CallFunction.Alias"),
			"InputRequestsQueueUrl": ref("InputRequestsQueue"),
			"MaxCallWaitSeconds":    ref("MaxCallWaitSeconds"),
			"InputTimeoutSeconds":   ref("InputTimeoutSeconds"),
		}
		if diff := cmp.Diff(want, path(rs[name], "Properties", "DefinitionSubstitutions")); diff != "" {
			t.Errorf("%s DefinitionSubstitutions (-want +got):\n%s", name, diff)
		}
	}
	for _, p := range []string{"MaxCallWaitSeconds", "InputTimeoutSeconds"} {
		if v, _ := d.number(path(d, "Parameters", p, "Default"), atDefault); v != 86400 {
			t.Errorf("%s defaults to %v, want 86400", p, v)
		}
	}
	if dlq, _, _ := refName(path(d, "Resources", "InputRequestsQueue", "Properties", "RedrivePolicy", "deadLetterTargetArn")); dlq != "InputRequestsDLQ" {
		t.Errorf("InputRequestsQueue redrives to %q, want InputRequestsDLQ", dlq)
	}
}
