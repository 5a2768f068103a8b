package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// fakePolicies holds one policy document for every catalog.
type fakePolicies struct{ doc string }

func (p fakePolicies) Get(context.Context, string) ([]byte, error) {
	if p.doc == "" {
		return nil, nil
	}
	return []byte(p.doc), nil
}

// fakeAudit keeps the entries appended, or fails with fail.
type fakeAudit struct {
	mu      sync.Mutex
	entries []audit.Entry
	fail    error
}

func (a *fakeAudit) Append(_ context.Context, e audit.Entry) (audit.Entry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return audit.Entry{}, a.fail
	}
	a.entries = append(a.entries, e)
	return e, nil
}

func (a *fakeAudit) decisions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.entries {
		out = append(out, e.Decision)
	}
	return out
}

const transferPolicy = `{"default": "allow", "rules": [
  {"tool": "word_stats", "decision": "deny"},
  {"tool": "calculate", "decision": "deny", "when": "has(args.expression) && args.expression.size() > 20"},
  {"tool": "current_*", "decision": "ask"}]}`

func policyEnv(t *testing.T, doc string) (*env, *fakeAudit) {
	t.Helper()
	e := newEnv(t)
	a := &fakeAudit{}
	e.handler.Policies, e.handler.PolicyCache, e.handler.Audit = fakePolicies{doc}, policy.NewCache(), a
	return e, a
}

func calls(e *env) int {
	e.server.mu.Lock()
	defer e.server.mu.Unlock()
	return len(e.server.calls)
}

// TestPolicyDenies: a rule by name and one by a CEL condition refuse the
// call before any connection, audited; a call the condition lets through
// runs.
func TestPolicyDenies(t *testing.T) {
	e, a := policyEnv(t, transferPolicy)
	for _, c := range []struct {
		name string
		req  map[string]any
		rule string
	}{
		{"by name", map[string]any{"catalog_id": "example", "tool_name": "word_stats"}, "rule 0"},
		{"by condition", map[string]any{"catalog_id": "example", "arguments": map[string]any{"expression": strings.Repeat("1+", 20) + "1"}}, "rule 1"},
	} {
		got := e.direct(t, request(c.req))
		if got.Error == nil || got.Error.Type != "mcp_tool_not_permitted_error" || !strings.Contains(got.Error.Message, c.rule) {
			t.Errorf("%s: %+v, want mcp_tool_not_permitted_error naming %s", c.name, got.Error, c.rule)
		}
	}
	if len(e.server.Configs()) != 0 {
		t.Errorf("connected %d times, want 0: refused before any request", len(e.server.Configs()))
	}
	if got := a.decisions(); !slices.Equal(got, []string{audit.Denied, audit.Denied}) {
		t.Errorf("audited %v, want two denies", got)
	}
	if got := e.direct(t, request(map[string]any{"catalog_id": "example", "arguments": map[string]any{"expression": "1+1"}})); got.Error != nil || calls(e) != 1 {
		t.Errorf("a short expression: %+v, %d calls; want it run once", got.Error, calls(e))
	}
	if len(a.decisions()) != 2 {
		t.Errorf("a plain allow was audited: %v", a.decisions())
	}
}

// pendingApproval is the approval_required answer's fields.
type pendingApproval struct {
	Type            string           `json:"type"`
	Status          string           `json:"status"`
	Tool            string           `json:"tool"`
	Hints           *mcp.Annotations `json:"hints"`
	ArgumentsSHA256 string           `json:"arguments_sha256"`
}

// TestPolicyAsksForApproval: ask answers approval_required without any
// request; the same call again without an approval answers the same; an
// approval for other arguments is refused; an approval runs the tool once,
// and a second approval replays its result.
func TestPolicyAsksForApproval(t *testing.T) {
	e, a := policyEnv(t, transferPolicy)
	yes := true
	e.catalog.hints = map[string]*mcp.Annotations{"current_time": {ReadOnlyHint: &yes}}
	base := map[string]any{"catalog_id": "example", "tool_name": "current_time", "tool_use_id": "toolu_ask", "arguments": map[string]any{"zone": "UTC", "format": "iso"}}
	first := e.direct(t, request(base))
	var p pendingApproval
	if first.Error != nil || json.Unmarshal(first.Result, &p) != nil || p.Type != TypePending || p.Status != StatusApprovalRequired ||
		p.Tool != "current_time" || p.Hints == nil || len(p.ArgumentsSHA256) != 64 {
		t.Fatalf("first = %s %+v, want approval_required with the tool, its hints and arguments_sha256", first.Result, first.Error)
	}
	if again := e.direct(t, request(base)); string(again.Result) != string(first.Result) {
		t.Errorf("asked again: %s, want the same answer", again.Result)
	}
	with := func(approved bool, sum string) map[string]any {
		m := map[string]any{"approval": map[string]any{"approved": approved, "by": "alice", "arguments_sha256": sum}}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	other := strings.Repeat("0", 64)
	if got := e.direct(t, request(with(true, other))); got.Error == nil || got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, "other arguments") {
		t.Errorf("an approval for other arguments: %+v", got.Error)
	}
	if calls(e) != 0 || len(e.server.Configs()) != 0 {
		t.Fatalf("%d calls before the approval, want none", calls(e))
	}
	reordered := with(true, p.ArgumentsSHA256)
	reordered["arguments"] = json.RawMessage(`{"format":"iso","zone":"UTC"}`)
	ran := e.direct(t, request(reordered))
	if ran.Error != nil || !strings.Contains(string(ran.Result), `"tool_result"`) || calls(e) != 1 {
		t.Fatalf("approved: %s %+v, %d calls; want the tool_result of one call", ran.Result, ran.Error, calls(e))
	}
	replay := e.direct(t, request(reordered))
	if replay.Error != nil || string(replay.Result) != string(ran.Result) || calls(e) != 1 {
		t.Errorf("approved twice: %s, %d calls; want the same result, one call", replay.Result, calls(e))
	}
	if got := a.decisions(); !slices.Equal(got, []string{audit.Asked, audit.Approved}) {
		t.Errorf("audited %v, want ask then approval granted", got)
	}
	for _, en := range a.entries {
		if en.ArgumentsSHA256 != p.ArgumentsSHA256 || en.CatalogID != "example" || en.Version != "example-v1" || en.Tool != "current_time" {
			t.Errorf("audit entry %+v: want the catalog, version, tool and arguments hash", en)
		}
	}
	if a.entries[1].By != "alice" {
		t.Errorf("the approval's entry is by %q, want alice", a.entries[1].By)
	}
}

// TestApprovalRefusedIsRecorded: a refusal is a recorded is_error result:
// the tool never runs, and the refusal replays.
func TestApprovalRefusedIsRecorded(t *testing.T) {
	e, a := policyEnv(t, transferPolicy)
	base := map[string]any{"catalog_id": "example", "tool_name": "current_time", "tool_use_id": "toolu_no"}
	var p pendingApproval
	if err := json.Unmarshal(e.direct(t, request(base)).Result, &p); err != nil {
		t.Fatal(err)
	}
	base["approval"] = map[string]any{"approved": false, "by": "bob", "arguments_sha256": p.ArgumentsSHA256}
	got := e.direct(t, request(base))
	var res struct {
		IsError bool `json:"is_error"`
	}
	if got.Error != nil || json.Unmarshal(got.Result, &res) != nil || !res.IsError || !strings.Contains(string(got.Result), "not approved") {
		t.Fatalf("refused: %s %+v, want an is_error result saying so", got.Result, got.Error)
	}
	if again := e.direct(t, request(base)); string(again.Result) != string(got.Result) || calls(e) != 0 {
		t.Errorf("replayed: %s, %d calls; want the same result and no call", again.Result, calls(e))
	}
	if got := a.decisions(); !slices.Equal(got, []string{audit.Asked, audit.Refused}) {
		t.Errorf("audited %v", got)
	}
}

// TestAskNeedsSomeoneToAsk: without an idempotency key, or from SQS
// without a task token (dead-lettered), an ask is a refusal.
func TestAskNeedsSomeoneToAsk(t *testing.T) {
	e, _ := policyEnv(t, transferPolicy)
	got := e.direct(t, request(map[string]any{"catalog_id": "example", "tool_name": "current_time"}))
	if got.Error == nil || got.Error.Type != "mcp_tool_not_permitted_error" || !strings.Contains(got.Error.Message, "idempotency key") {
		t.Errorf("no key: %+v", got.Error)
	}
	sqs := e.direct(t, runnertest.Payload(runnertest.SQSEvent(string(request(map[string]any{"catalog_id": "example", "tool_name": "current_time"})))))
	if len(sqs.DeadLetters) != 1 || calls(e) != 0 {
		t.Errorf("from SQS: %d dead letters, %d calls; want the record dead-lettered, no call", len(sqs.DeadLetters), calls(e))
	}
}

// TestAuditFailureFailsTheItem: a decision that cannot be audited is not
// acted on: the item fails (retryable) and nothing runs.
func TestAuditFailureFailsTheItem(t *testing.T) {
	e, a := policyEnv(t, transferPolicy)
	a.fail = errors.New("throttled")
	got := e.direct(t, request(map[string]any{"catalog_id": "example", "tool_name": "current_time", "tool_use_id": "toolu_a"}))
	if got.Error == nil || got.Error.Type != "internal_error" || calls(e) != 0 {
		t.Errorf("%+v, %d calls; want internal_error and no call", got.Error, calls(e))
	}
}

// signalPolicies closes started when its Get begins.
type signalPolicies struct {
	fakePolicies
	started chan struct{}
}

func (p signalPolicies) Get(ctx context.Context, id string) ([]byte, error) {
	close(p.started)
	return p.fakePolicies.Get(ctx, id)
}

// lookupAfter is a catalog whose Lookup answers only once the policy read
// has begun (or fails after a generous wait).
type lookupAfter struct {
	Catalog
	started chan struct{}
}

func (c lookupAfter) Lookup(ctx context.Context, id, tool string) (catalog.Membership, error) {
	select {
	case <-c.started:
		return c.Catalog.Lookup(ctx, id, tool)
	case <-time.After(10 * time.Second):
		return catalog.Membership{}, errors.New("the policy was not read beside the lookup")
	}
}

// TestPolicyReadBesideLookup: the policy read does not wait for the
// catalog lookup (one round trip of latency, not two).
func TestPolicyReadBesideLookup(t *testing.T) {
	e, _ := policyEnv(t, transferPolicy)
	started := make(chan struct{})
	e.handler.Policies = signalPolicies{fakePolicies{transferPolicy}, started}
	e.handler.Catalog = lookupAfter{e.catalog, started}
	if got := e.direct(t, request(map[string]any{"catalog_id": "example", "tool_name": "word_stats"})); got.Error == nil || got.Error.Type != "mcp_tool_not_permitted_error" {
		t.Errorf("%+v, want the deny: the lookup waited for the policy read", got.Error)
	}
}
