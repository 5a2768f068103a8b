package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/policy"
)

const e2ePolicy = `{"default": "allow", "rules": [
  {"tool": "fail", "decision": "deny"},
  {"tool": "echo", "decision": "deny", "when": "has(args.text) && args.text.startsWith('rm ')"},
  {"tool": "add", "decision": "ask"}]}`

// policyStack is a stack with catalog "pol" discovered from a fixture
// server and e2ePolicy set on it, as mcpfn-catalog policy set writes it.
func policyStack(t *testing.T) (*stack, string, *mcptest.Counters, *dynamodb.Client) {
	t.Helper()
	url, counters := taskServer(t, &mcptest.Tasks{})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url)}})
	if res := invoke(t, s.discover, mustJSON(t, map[string]any{"server_url": url, "catalog_id": "pol"})); res.ErrorType != "" {
		t.Fatalf("discover: %s %s", res.ErrorType, res.ErrorMessage)
	}
	db := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(t.Context()))
	if err := policy.NewStore(db, s.catalogTable).Put(t.Context(), "pol", []byte(e2ePolicy)); err != nil {
		t.Fatal(err)
	}
	return s, url, counters, db
}

// TestPolicyThroughTheBootstrap: through the real call bootstrap under the
// RIE, a deny by name and one by a CEL condition are refused with
// mcp_tool_not_permitted_error before any request reaches the server; an
// allowed call runs; the audit chain holds the two denies and verifies.
func TestPolicyThroughTheBootstrap(t *testing.T) {
	s, url, counters, db := policyStack(t)
	before := len(counters.Methods())
	for _, c := range []map[string]any{
		{"server_url": url, "catalog_id": "pol", "tool_name": "fail"},
		{"server_url": url, "catalog_id": "pol", "tool_name": "echo", "arguments": map[string]any{"text": "rm -rf /"}},
	} {
		if res := invoke(t, s.call, mustJSON(t, c)); res.ErrorType != "mcp_tool_not_permitted_error" {
			t.Errorf("%v: %s %s, want mcp_tool_not_permitted_error", c, res.ErrorType, res.ErrorMessage)
		}
	}
	if n := len(counters.Methods()) - before; n != 0 {
		t.Errorf("the refused calls sent %d requests to the server, want 0", n)
	}
	res := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": url, "catalog_id": "pol", "tool_name": "echo", "tool_use_id": "toolu_ok", "arguments": map[string]any{"text": "hello"}}))
	if res.ErrorType != "" {
		t.Fatalf("an allowed call: %s %s", res.ErrorType, res.ErrorMessage)
	}
	checkToolResult(t, res.Payload, "toolu_ok", false, "hello")
	trail := audit.New(db, s.auditTable)
	entries, err := trail.List(t.Context(), "pol")
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, e := range entries {
		decisions = append(decisions, e.Decision)
	}
	if !slices.Equal(decisions, []string{audit.Denied, audit.Denied}) {
		t.Errorf("audited %v, want the two denies", decisions)
	}
	if r, err := trail.Verify(t.Context(), "pol"); err != nil || !r.OK() {
		t.Errorf("Verify = %+v, %v; want a whole chain", r, err)
	}
}

// TestStateMachineApproval: call.asl.json in aws-local-stepfunctions with
// the real call bootstrap: ask answers approval_required, AskForApproval
// hands it to the platform, and its approval runs the tool once through
// AnswerTool; a refusal ends with the recorded is_error result and no
// tools/call.
func TestStateMachineApproval(t *testing.T) {
	node(t)
	s, url, counters, _ := policyStack(t)
	for _, tc := range []struct {
		name     string
		approved bool
		isError  bool
		text     string
		calls    int
	}{
		{"approved", true, false, "5", 1},
		{"refused", false, true, `The tool call was not approved (refused by "alice"); the tool did not run.`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls0 := countMethod(counters, "tools/call")
			p := newPlatform(t, func(m inputMessage) (int, any) {
				return http.StatusOK, map[string]any{"approval": map[string]any{"approved": tc.approved, "by": "alice",
					"arguments_sha256": m.MessageBody.Approval["arguments_sha256"]}}
			})
			id := "toolu_sfn_approval_" + tc.name
			input := map[string]any{"server_url": url, "catalog_id": "pol", "tool_name": "add", "tool_use_id": id, "arguments": json.RawMessage(`{"a": 2, "b": 3}`)}
			ex := runMachine(t, machineRun{name: "call", execName: "approval-" + tc.name, input: input, tasks: callTasks(s.call.URL()),
				queues: map[string]string{"AskForApproval": p.url}, waitMs: new(int)})
			if ex.Status != "SUCCEEDED" {
				t.Fatalf("execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
			}
			checkToolResult(t, ex.Output, id, tc.isError, tc.text)
			msgs := p.received()
			if len(msgs) != 1 || msgs[0].MessageBody.Approval["status"] != "approval_required" || msgs[0].MessageBody.Approval["tool"] != "add" {
				t.Errorf("messages %+v, want one approval_required for add", msgs)
			}
			if n := countMethod(counters, "tools/call") - calls0; n != tc.calls {
				t.Errorf("tools/call sent %d times, want %d", n, tc.calls)
			}
		})
	}
}
