package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// stack is the call function wired as main wires it, over moto (DynamoDB
// catalog and ledger, SQS dead-letter queue, Secrets Manager vaults) and
// real MCP servers on loopback, which its guard policy allows.
type stack struct {
	*runnertest.Stack
	handler *Handler
	calls   string
	ledger  *ledger.Dynamo
}

func newStack(t *testing.T, tweak func(*runner.Config)) *stack {
	t.Helper()
	s := &stack{Stack: runnertest.NewStack(t, "call")}
	_, s.calls = awstest.NewTable(t, s.Moto, "calls", ledger.CreateTable)
	// moto's conditional writes are not atomic, DynamoDB's are: racing
	// Begins (TestDuplicateDeliveryRunsOnce) go through ledgertest.Strict.
	s.ledger = ledger.NewDynamo(localstack.NewStrict(s.DDB), s.calls, time.Minute)
	s.handler = &Handler{
		Connect:     connect,
		HTTPClient:  s.Client(t, mcp.CallTimeout),
		Policy:      s.Policy,
		Catalog:     s.Store,
		Credentials: vault.NewResolver(s.Secrets, s.Prefix, vault.WithOAuth(vault.OAuth{Secrets: s.Secrets, Policy: s.Policy})),
		Ledger:      s.ledger,
		Logger:      s.Logger,
	}
	s.Start(t, s.handler, tweak)
	return s
}

// discover stores the fixture's real listing as catalog id.
func (s *stack) discover(t *testing.T, id string, srv *mcptest.Server) {
	t.Helper()
	conn, err := mcp.Connect(t.Context(), mcp.Config{URL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	listing, err := conn.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := conn.Stats()
	if _, err := s.Store.Put(t.Context(), id, catalog.Discovery{Listing: listing, ProtocolVersion: st.ProtocolVersion, ServerDiscovery: st.Discovery}); err != nil {
		t.Fatal(err)
	}
}

func callBody(fields map[string]any) string { return string(runnertest.Payload(fields)) }

// cause is one real way a call fails, and the wire type it must produce.
// A requeued cause comes back to the queue even with a task token.
type cause struct {
	name     string
	body     func(t *testing.T, s *stack) string
	wants    string
	requeued bool
}

func realCauses() []cause {
	return []cause{
		{"malformed event", func(t *testing.T, s *stack) string {
			return `{"server_url":"https://mcp.example.com/mcp","tool_name":"echo","input":{}}`
		}, "invalid_request_error", false},
		{"loopback the policy does not allow", func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{})
			u, _ := url.Parse(srv.URL)
			return callBody(map[string]any{"server_url": "https://[::1]:" + u.Port() + "/mcp", "tool_name": "echo", "arguments": map[string]string{"text": "hi"}})
		}, "mcp_egress_denied_error", false},
		{"401 without a credential", func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{BearerToken: "right"})
			return callBody(map[string]any{"server_url": srv.URL, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}})
		}, "mcp_authentication_failed_error", false},
		{"403 with a wrong credential", func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{BearerToken: "right"})
			id := awstest.UniqueName("wrong")
			vaulttest.CreateSecret(t, s.Secrets, s.Prefix+id, vault.Credential{ServerURL: srv.URL, Token: "wrong"})
			return callBody(map[string]any{"server_url": srv.URL, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}, "vault_ids": []string{id}})
		}, "mcp_authentication_failed_error", false},
		{"nothing listens on the port", func(t *testing.T, s *stack) string {
			return callBody(map[string]any{"server_url": runnertest.ClosedPortURL(t), "tool_name": "echo"})
		}, "mcp_connection_failed_error", false},
		{"server answers garbage", func(t *testing.T, s *stack) string {
			return callBody(map[string]any{"server_url": runnertest.GarbageServer(t), "tool_name": "echo"})
		}, "mcp_protocol_error", false},
		{"another delivery holds the call", func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{})
			id := awstest.UniqueName("toolu")
			other := ledger.NewDynamo(s.DDB, s.calls, time.Minute)
			if _, err := other.Begin(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			return callBody(map[string]any{"server_url": srv.URL, "tool_name": "echo", "arguments": map[string]string{"text": "hi"}, "tool_use_id": id})
		}, "internal_error", true},
	}
}

// TestWireErrorsFromRealCauses: each wire type, produced by a real cause,
// for a direct invocation, an SQS record and an SQS record with a task
// token.
func TestWireErrorsFromRealCauses(t *testing.T) {
	s := newStack(t, nil)
	for _, c := range realCauses() {
		t.Run(c.name, func(t *testing.T) {
			t.Run("direct", func(t *testing.T) {
				out, err := s.Invoke(t, []byte(c.body(t, s)), time.Minute)
				if a, ok := out.(PendingAnswer); c.requeued && (err != nil || !ok || a.Status != "working") {
					t.Errorf("answer %+v (%v), want pending working: a direct duplicate waits (TestRunningElsewhere)", out, err)
				} else if c.requeued {
					return
				}
				if got := runnertest.WireType(err); got != c.wants {
					t.Errorf("errorType = %q (%v), want %q", got, err, c.wants)
				}
			})
			t.Run("sqs", func(t *testing.T) { s.CheckRecord(t, c.body(t, s), c.wants) })
			t.Run("task token", func(t *testing.T) {
				if !c.requeued {
					s.CheckTaskFailure(t, c.body(t, s), "token-"+c.name, c.wants)
					return
				}
				s.Tasks.Reset()
				var fields map[string]any
				if err := json.Unmarshal([]byte(c.body(t, s)), &fields); err != nil {
					t.Fatal(err)
				}
				fields["task_token"] = "token-" + c.name
				out, err := s.Invoke(t, runnertest.Payload(runnertest.SQSEvent(callBody(fields))), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if failed := out.(events.SQSEventResponse).BatchItemFailures; len(failed) != 1 || len(s.Tasks.Reports()) != 0 {
					t.Errorf("failures %v, task reports %+v; want msg-0 back in the queue and the task left alone", failed, s.Tasks.Reports())
				}
			})
		})
	}
}

// TestBatchOfTen: mixed outcomes in one batch; exactly the retryable
// records come back, the permanent ones are in the DLQ.
func TestBatchOfTen(t *testing.T) {
	s := newStack(t, nil)
	causes := realCauses()
	ok := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	secured := mcptest.NewServer(t, mcptest.Options{BearerToken: "s3cr3t"})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"team", vault.Credential{ServerURL: secured.URL, Token: "s3cr3t"})
	bodies := []string{
		callBody(map[string]any{"server_url": ok.URL, "tool_name": "echo", "arguments": map[string]string{"text": "zero"}, "tool_use_id": "toolu_b0"}),
		callBody(map[string]any{"server_url": secured.URL, "tool_name": "echo", "arguments": map[string]string{"text": "one"}, "vault_ids": []string{"team"}}),
		causes[0].body(t, s), // 2 invalid
		causes[1].body(t, s), // 3 egress denied
		causes[2].body(t, s), // 4 401
		causes[4].body(t, s), // 5 connection
		causes[5].body(t, s), // 6 protocol
		causes[6].body(t, s), // 7 in progress
		callBody(map[string]any{"server_url": ok.URL, "tool_name": "fail", "tool_use_id": "toolu_b8"}),
		callBody(map[string]any{"server_url": ok.URL, "tool_name": "nonexistent", "tool_use_id": "toolu_b9", "task_token": "tok-9"}),
	}
	out, err := s.Invoke(t, runnertest.Payload(runnertest.SQSEvent(bodies...)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range out.(events.SQSEventResponse).BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if diff := cmp.Diff([]string{"msg-5", "msg-6", "msg-7"}, failed); diff != "" {
		t.Errorf("batch item failures (-want +got):\n%s", diff)
	}
	var dead []string
	for _, m := range runnertest.Drain(t, s.SQS, s.DLQ, 3) {
		dead = append(dead, m.Attributes["mcpfn.source_message_id"]+" "+m.Attributes["mcpfn.error_type"])
	}
	wantDead := []string{"msg-2 invalid_request_error", "msg-3 mcp_egress_denied_error", "msg-4 mcp_authentication_failed_error"}
	if diff := cmp.Diff(wantDead, slices.Sorted(slices.Values(dead))); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
	reports := s.Tasks.Reports()
	if len(reports) != 1 || reports[0].TaskToken != "tok-9" || reports[0].Error != "" ||
		!strings.Contains(string(reports[0].Output), `"is_error":true`) {
		t.Errorf("task reports %+v, want tok-9 succeeding with a refusal (unknown tool) as is_error", reports)
	}
	if n := ok.CallCount("echo") + secured.CallCount("echo") + ok.CallCount("fail"); n != 3 {
		t.Errorf("tools ran %d times, want 3", n)
	}
}

// TestDeadlineTooShort: one record at a time, 2 s each, 8.9 s to the
// deadline, a 1 s reserve and a 4 s minimum budget, so a record must start
// within 3.9 s: the second starts at about 2 s, the third not before 4 s
// (two 2 s tools ran), so it and the fourth go back to the queue unstarted.
func TestDeadlineTooShort(t *testing.T) {
	s := newStack(t, func(c *runner.Config) {
		c.Concurrency, c.Reserve, c.MinBudget = 1, time.Second, 4*time.Second
	})
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	var bodies []string
	for i := range 4 {
		bodies = append(bodies, callBody(map[string]any{"server_url": srv.URL, "tool_name": "slow", "arguments": map[string]int{"ms": 2000}, "tool_use_id": fmt.Sprintf("toolu_slow%d", i)}))
	}
	out, err := s.Invoke(t, runnertest.Payload(runnertest.SQSEvent(bodies...)), 8900*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range out.(events.SQSEventResponse).BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if diff := cmp.Diff([]string{"msg-2", "msg-3"}, failed); diff != "" {
		t.Errorf("batch item failures (-want +got):\n%s", diff)
	}
	if n := srv.CallCount("slow"); n != 2 {
		t.Errorf("slow ran %d times, want 2", n)
	}
	for _, sum := range s.Logs.Summaries() {
		want := "succeeded"
		if sum["work_item"] == "msg-2" || sum["work_item"] == "msg-3" {
			want = "not_started"
		}
		if sum["outcome"] != want {
			t.Errorf("%v: outcome %v, want %s", sum["work_item"], sum["outcome"], want)
		}
	}
}

// TestDuplicateDeliveryRunsOnce: the same message delivered twice, and two
// deliveries of one tool use racing, run the tool once.
func TestDuplicateDeliveryRunsOnce(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{})
	t.Run("redelivered message", func(t *testing.T) {
		ev := runnertest.Payload(runnertest.SQSEvent(callBody(map[string]any{"server_url": srv.URL, "tool_name": "echo", "arguments": map[string]string{"text": "once"}, "task_token": "tok-a"})))
		for range 2 {
			if out, err := s.Invoke(t, ev, time.Minute); err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
				t.Fatalf("Handle = %v, %v", out, err)
			}
		}
		reports := s.Tasks.Reports()
		if len(reports) != 2 || string(reports[0].Output) != string(reports[1].Output) {
			t.Errorf("reports %+v, want the same output twice", reports)
		}
		if n := srv.CallCount("echo"); n != 1 {
			t.Errorf("echo ran %d times, want 1", n)
		}
	})
	t.Run("redelivered to a closed task", func(t *testing.T) {
		// A 1 s budget: slow times out after its request went out, a failure
		// the ledger stores and replays.
		s := newStack(t, func(c *runner.Config) { c.OperationTimeout = time.Second })
		s.Tasks.Once = true
		srv := mcptest.NewServer(t, mcptest.Options{})
		for _, tool := range []string{"echo", "slow"} {
			ev := runnertest.Payload(runnertest.SQSEvent(callBody(map[string]any{"server_url": srv.URL, "tool_name": tool, "arguments": map[string]any{"text": "x", "ms": 3000}, "task_token": "tok-" + tool})))
			for range 2 {
				if out, err := s.Invoke(t, ev, time.Minute); err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
					t.Fatalf("Handle = %v, %v; want the record done", out, err)
				}
			}
		}
		if reports := s.Tasks.Reports(); len(reports) != 2 || reports[0].Error != "" || reports[1].Error != "mcp_connection_failed_error" {
			t.Errorf("reports %+v, want echo's result and slow's failure, once each", reports)
		}
		if n := runnertest.Pending(t, s.SQS, s.DLQ); n != 0 {
			t.Errorf("%d dead letters, want none", n)
		}
		var closed []string
		for _, sum := range s.Logs.Summaries() {
			if sum["outcome"] == "task_closed" && sum["replayed"] == true {
				closed = append(closed, fmt.Sprint(sum["tool"], " ", sum["task_report_error"]))
			}
		}
		if diff := cmp.Diff([]string{"echo TaskTimedOut", "slow TaskTimedOut"}, slices.Sorted(slices.Values(closed))); diff != "" {
			t.Errorf("replays ending task_closed (-want +got):\n%s", diff)
		}
	})
	t.Run("racing deliveries of one tool use", func(t *testing.T) {
		body := callBody(map[string]any{"server_url": srv.URL, "tool_name": "slow", "arguments": map[string]int{"ms": 3000}, "tool_use_id": "toolu_race"})
		var wg sync.WaitGroup
		results := make([]any, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { results[i], errs[i] = s.Invoke(t, []byte(body), time.Minute) })
		}
		wg.Wait()
		_, pending0 := results[0].(PendingAnswer)
		if _, pending1 := results[1].(PendingAnswer); errs[0] != nil || errs[1] != nil || pending0 == pending1 {
			t.Fatalf("results %+v, errors %v; want one result and one pending answer (in progress elsewhere)", results, errs)
		}
		if pending0 {
			results[0], results[1] = results[1], results[0]
		}
		again, err := s.Invoke(t, []byte(body), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.CallCount("slow"); n != 1 {
			t.Errorf("slow ran %d times, want 1", n)
		}
		a, _ := json.Marshal(results[0])
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Errorf("replay %s, want %s", b, a)
		}
	})
}

// TestCatalogGatesTheCall: with catalog_id, a tool the stored catalog lacks
// is refused before any connection, and a listed one runs primed from the
// recorded server/discover answer: one HTTP request.
func TestCatalogGatesTheCall(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	s.discover(t, "fixture", srv)
	before := srv.Requests()
	_, err := s.Invoke(t, []byte(callBody(map[string]any{"server_url": srv.URL, "tool_name": "rm_rf", "catalog_id": "fixture"})), time.Minute)
	if ive, ok := err.(messages.InvokeResponse_Error); !ok || ive.Type != "invalid_request_error" || !strings.Contains(ive.Message, `"rm_rf"`) {
		t.Errorf("error = %v, want invalid_request_error naming rm_rf", err)
	}
	if srv.Requests() != before {
		t.Errorf("the server got %d requests for a refused tool", srv.Requests()-before)
	}
	s.Logs.Reset()
	out, err := s.Invoke(t, []byte(callBody(map[string]any{"server_url": srv.URL, "tool_name": "add", "arguments": map[string]int{"a": 2, "b": 3}, "catalog_id": "fixture", "tool_use_id": "toolu_add"})), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	if want := `{"type":"tool_result","tool_use_id":"toolu_add","is_error":false,"content":[{"type":"text","text":"5"},{"type":"text","text":"{\"sum\":5}"}]}`; string(got) != want {
		t.Errorf("result %s, want %s", got, want)
	}
	if sums := s.Logs.Summaries(); len(sums) != 1 || sums[0]["protocol_version"] != "2026-07-28" || sums[0]["catalog_version"] == "" ||
		sums[0]["requests"] != 1.0 || sums[0]["primed"] != true || sums[0]["prime_fallback"] != nil {
		t.Errorf("summaries %v, want one with protocol 2026-07-28, the catalog version, primed, 1 request", sums)
	}
	if n := srv.Requests() - before; n != 1 {
		t.Errorf("the server got %d requests for a primed call, want 1", n)
	}
}

// TestPrimedCallFallsBack: the catalog recorded a 2026-07-28 server, which
// has since moved to the legacy era. The primed call is refused, the call
// connects again unprimed within its budget, the tool runs once, and the
// summary line and a warning say so.
func TestPrimedCallFallsBack(t *testing.T) {
	s := newStack(t, nil)
	modern := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	s.discover(t, "moved", modern)
	legacy := mcptest.NewServer(t, mcptest.Options{})
	s.Logs.Reset()
	out, err := s.Invoke(t, []byte(callBody(map[string]any{"server_url": legacy.URL, "tool_name": "add", "arguments": map[string]int{"a": 2, "b": 3}, "catalog_id": "moved", "tool_use_id": "toolu_moved"})), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(out); !strings.Contains(string(got), `"is_error":false`) {
		t.Errorf("result %s", got)
	}
	if n := legacy.CallCount("add"); n != 1 {
		t.Errorf("add ran %d times, want 1", n)
	}
	want := []string{"tools/call", "server/discover", "initialize", "notifications/initialized", "tools/call", "DELETE"}
	if got := legacy.Methods(); !slices.Equal(got, want) {
		t.Errorf("methods %v, want %v", got, want)
	}
	sums := s.Logs.Summaries()
	if len(sums) != 1 || sums[0]["protocol_version"] != "2025-11-25" || sums[0]["requests"] != float64(len(want)) ||
		sums[0]["primed"] != true || sums[0]["prime_fallback"] != true {
		t.Errorf("summaries %v, want one with 2025-11-25, %d requests, primed and prime_fallback", sums, len(want))
	}
	if !strings.Contains(s.Logs.String(), "connected again unprimed") {
		t.Errorf("no fallback warning in the logs:\n%s", s.Logs.String())
	}
}

// TestCallByModelName: a server lists a dotted tool name, which models
// cannot send; the catalog gives it a model_name, the call names it by
// that, and the server is sent its own name.
func TestCallByModelName(t *testing.T) {
	s := newStack(t, nil)
	server := sdk.NewServer(&sdk.Implementation{Name: "dotted", Version: "1"}, nil)
	var got []string
	var mu sync.Mutex
	sdk.AddTool(server, &sdk.Tool{Name: "admin.echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			got = append(got, req.Params.Name)
			mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	listing := mcp.Listing{Tools: []mcp.Tool{{Name: "admin.echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	if _, err := s.Store.Put(t.Context(), "dotted", catalog.Discovery{Listing: listing, ProtocolVersion: "2026-07-28"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Store.Get(t.Context(), "dotted")
	if err != nil || len(c.Tools) != 1 || c.Tools[0].ModelName == "" || c.Tools[0].ModelName == "admin.echo" {
		t.Fatalf("stored %+v, %v; want a model_name for admin.echo", c, err)
	}
	out, err := s.Invoke(t, []byte(callBody(map[string]any{"server_url": ts.URL, "tool_name": c.Tools[0].ModelName, "catalog_id": "dotted", "tool_use_id": "toolu_dotted"})), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); !strings.Contains(string(b), `"text":"ok"`) {
		t.Errorf("result %s", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []string{"admin.echo"}) {
		t.Errorf("the server was sent %v, want [admin.echo]", got)
	}
}
