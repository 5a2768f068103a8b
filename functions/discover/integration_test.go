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
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// stack is the discover function wired as main wires it, over moto
// (DynamoDB catalog, SQS dead-letter queue, Secrets Manager vaults) and real
// MCP servers on loopback, which its guard policy allows.
type stack struct {
	*runnertest.Stack
	handler *Handler
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{Stack: runnertest.NewStack(t, "discover")}
	s.handler = &Handler{
		Connect:     connect,
		HTTPClient:  s.Client(t, mcp.DialTimeout),
		Policy:      s.Policy,
		Store:       s.Store,
		Credentials: vault.NewResolver(s.Secrets, s.Prefix, vault.WithOAuth(vault.OAuth{Secrets: s.Secrets, Policy: s.Policy})),
		Logger:      s.Logger,
	}
	s.Start(t, s.handler, nil)
	return s
}

func (s *stack) invoke(t *testing.T, payload []byte) (any, error) {
	t.Helper()
	return s.Invoke(t, payload, time.Minute)
}

func body(fields map[string]any) string { return string(runnertest.Payload(fields)) }

// cursorLoopServer serves go-sdk's tools/list with every page claiming a
// next page under the same cursor.
func cursorLoopServer(t *testing.T) string {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "looper", Version: "1"}, nil)
	server.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			if p, ok := req.GetParams().(*sdk.ListToolsParams); ok {
				p.Cursor = ""
			}
			res, err := next(ctx, method, req)
			if r, ok := res.(*sdk.ListToolsResult); ok {
				r.NextCursor = "again"
			}
			return res, err
		}
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

type cause struct {
	name   string
	body   func(t *testing.T, s *stack) string
	tweak  func(s *stack) // applied to the stack before invoking
	wants  string
	stored bool // the failure is recorded on the catalog
}

func realCauses() []cause {
	return []cause{
		{name: "malformed event", body: func(t *testing.T, s *stack) string {
			return `{"catalog_id":"c","server_url":"https://mcp.example.com/mcp","extra":true}`
		}, wants: "invalid_request_error"},
		{name: "loopback the policy does not allow", body: func(t *testing.T, s *stack) string {
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": "https://[::1]:8443/mcp"})
		}, wants: "mcp_egress_denied_error", stored: true},
		{name: "401 without a credential", body: func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{BearerToken: "right"})
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": srv.URL})
		}, wants: "mcp_authentication_failed_error", stored: true},
		{name: "nothing listens on the port", body: func(t *testing.T, s *stack) string {
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": runnertest.ClosedPortURL(t)})
		}, wants: "mcp_connection_failed_error", stored: true},
		{name: "server answers garbage", body: func(t *testing.T, s *stack) string {
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": runnertest.GarbageServer(t)})
		}, wants: "mcp_protocol_error", stored: true},
		{name: "cursor loop", body: func(t *testing.T, s *stack) string {
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": cursorLoopServer(t)})
		}, wants: "mcp_protocol_error", stored: true},
		{name: "catalog table missing", body: func(t *testing.T, s *stack) string {
			srv := mcptest.NewServer(t, mcptest.Options{})
			return body(map[string]any{"catalog_id": awstest.UniqueName("c"), "server_url": srv.URL})
		}, tweak: func(s *stack) {
			s.handler.Store = catalog.NewDynamo(s.DDB, awstest.UniqueName("no-such-table"))
		}, wants: "internal_error"},
	}
}

// TestWireErrorsFromRealCauses: each wire type, produced by a real cause,
// for a direct invocation, an SQS record and an SQS record with a task
// token; the failure is recorded on the catalog.
func TestWireErrorsFromRealCauses(t *testing.T) {
	for _, c := range realCauses() {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t)
			if c.tweak != nil {
				c.tweak(s)
			}
			t.Run("direct", func(t *testing.T) {
				b := c.body(t, s)
				_, err := s.invoke(t, []byte(b))
				if got := runnertest.WireType(err); got != c.wants {
					t.Fatalf("errorType = %q (%v), want %q", got, err, c.wants)
				}
				if c.stored {
					var req Request
					_ = json.Unmarshal([]byte(b), &req)
					got, gerr := s.Store.Get(t.Context(), req.CatalogID)
					if gerr != nil || got.LastFailure == nil || got.LastFailure.ErrorType != c.wants {
						t.Errorf("stored catalog %+v (%v), want the failure recorded as %s", got, gerr, c.wants)
					}
				}
			})
			t.Run("sqs", func(t *testing.T) { s.CheckRecord(t, c.body(t, s), c.wants) })
			t.Run("task token", func(t *testing.T) { s.CheckTaskFailure(t, c.body(t, s), "token-"+c.name, c.wants) })
		})
	}
}

// TestDialTimeRefusal: with the process-wide default policy (no allow
// entries) and mcp.DefaultClient, a name that resolves to loopback passes
// the URL check and is refused when dialed.
func TestDialTimeRefusal(t *testing.T) {
	s := newStack(t)
	s.handler.HTTPClient, s.handler.Policy = nil, nil
	srv := mcptest.NewServer(t, mcptest.Options{})
	u, _ := url.Parse(srv.URL)
	_, err := s.invoke(t, []byte(body(map[string]any{"catalog_id": "localhost", "server_url": "https://localhost:" + u.Port() + "/mcp"})))
	if got := runnertest.WireType(err); got != "mcp_egress_denied_error" {
		t.Errorf("errorType = %q (%v), want mcp_egress_denied_error", got, err)
	}
	if srv.Requests() != 0 {
		t.Errorf("the server got %d requests", srv.Requests())
	}
}

// TestDiscoverIntoDynamo: a paginated listing in both protocol eras is
// stored; a repeat is unchanged; a later failure keeps the tools.
func TestDiscoverIntoDynamo(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%t", stateless), func(t *testing.T) {
			s := newStack(t)
			srv := mcptest.NewServer(t, mcptest.Options{Stateless: stateless, PageSize: 4, ExtraTools: 5})
			vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"team", vault.Credential{ServerURL: srv.URL, Token: "unused-but-sent"})
			req := []byte(body(map[string]any{"catalog_id": "fixture", "server_url": srv.URL, "vault_ids": []string{"team"}}))
			out, err := s.invoke(t, req)
			if err != nil {
				t.Fatal(err)
			}
			res := out.(*Result)
			// Four pages of tools; the legacy era adds initialize,
			// notifications/initialized and the closing DELETE.
			wantVersion, wantRequests := "2025-11-25", 8
			if stateless {
				wantVersion, wantRequests = "2026-07-28", 5
			}
			if res.ToolCount != 15 || res.Unchanged || res.ProtocolVersion != wantVersion || res.Server.Name != mcptest.Name ||
				res.Requests != wantRequests || res.ResponseBytes == 0 || len(res.Refused) != 0 || res.Version == "" {
				t.Errorf("result %+v, want %d requests", res, wantRequests)
			}
			if srv.Requests() != wantRequests {
				t.Errorf("the server got %d requests, the result says %d", srv.Requests(), res.Requests)
			}
			got, err := s.Store.Get(t.Context(), "fixture")
			if err != nil || len(got.Tools) != 15 || got.Version != res.Version || got.ProtocolVersion != wantVersion {
				t.Fatalf("stored %+v, %v", got, err)
			}
			if (got.ServerDiscovery != "") != stateless {
				t.Errorf("stored server/discover answer %q; want one exactly for the 2026-07-28 server", got.ServerDiscovery)
			}

			if res.Changes == nil || len(res.Changes.Added) != 15 || len(res.Changes.Removed) != 0 || len(res.Changes.Changed) != 0 || res.Changes.AddedCount != 15 {
				t.Errorf("changes %+v, want the 15 tools added", res.Changes)
			}

			again, err := s.invoke(t, req)
			if err != nil || !again.(*Result).Unchanged || again.(*Result).Version != res.Version || again.(*Result).Changes != nil {
				t.Errorf("repeat = %+v, %v; want unchanged at %s, no changes", again, err, res.Version)
			}

			s.handler.HTTPClient, s.handler.Policy = nil, nil // the process default: the fixture is not allowed
			_, err = s.invoke(t, req)
			if runnertest.WireType(err) != "mcp_egress_denied_error" {
				t.Fatalf("error = %v, want mcp_egress_denied_error", err)
			}
			got, err = s.Store.Get(t.Context(), "fixture")
			if err != nil || len(got.Tools) != 15 || got.Version != res.Version || got.LastFailure == nil || got.LastFailure.ErrorType != "mcp_egress_denied_error" {
				t.Errorf("after the failure: %+v, %v; want the tools kept and the failure recorded", got, err)
			}
		})
	}
}

// TestBatchMixed: one batch, every disposition.
func TestBatchMixed(t *testing.T) {
	s := newStack(t)
	causes := realCauses()
	ok := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	bodies := []string{
		body(map[string]any{"catalog_id": "ok-1", "server_url": ok.URL}),
		causes[0].body(t, s), // invalid
		causes[1].body(t, s), // egress
		causes[2].body(t, s), // 401
		causes[3].body(t, s), // connection
		causes[4].body(t, s), // protocol
		body(map[string]any{"catalog_id": "ok-2", "server_url": ok.URL, "task_token": "tok-6"}),
		body(map[string]any{"catalog_id": "bad-7", "server_url": "https://[::1]/mcp", "task_token": "tok-7"}),
	}
	out, err := s.invoke(t, runnertest.Payload(runnertest.SQSEvent(bodies...)))
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range out.(events.SQSEventResponse).BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if strings.Join(failed, ",") != "msg-4,msg-5" {
		t.Errorf("batch item failures %v, want msg-4,msg-5", failed)
	}
	var dead []string
	for _, m := range runnertest.Drain(t, s.SQS, s.DLQ, 3) {
		dead = append(dead, m.Attributes["mcpfn.source_message_id"])
	}
	if slices.Sort(dead); strings.Join(dead, ",") != "msg-1,msg-2,msg-3" {
		t.Errorf("dead letters %v, want msg-1..3", dead)
	}
	reports := s.Tasks.Reports()
	if len(reports) != 2 || reports[0].Error != "" || reports[1].Error != "mcp_egress_denied_error" {
		t.Errorf("task reports %+v", reports)
	}
}

// TestRedeliveryToAClosedTask: a record whose task already has its outcome
// is delivered again; discovery runs again (it is idempotent), Step
// Functions answers TaskTimedOut, and the record is done, not requeued or
// dead-lettered.
func TestRedeliveryToAClosedTask(t *testing.T) {
	s := newStack(t)
	s.Tasks.Once = true
	ok := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	ev := runnertest.Payload(runnertest.SQSEvent(
		body(map[string]any{"catalog_id": "again", "server_url": ok.URL, "task_token": "tok-ok"}),
		body(map[string]any{"catalog_id": "again-bad", "server_url": "https://[::1]/mcp", "task_token": "tok-bad"}),
	))
	for i := range 2 {
		out, err := s.invoke(t, ev)
		if err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: Handle = %v, %v; want both records done", i, out, err)
		}
	}
	if reports := s.Tasks.Reports(); len(reports) != 2 || reports[0].Error != "mcp_egress_denied_error" || reports[1].Error != "" {
		t.Errorf("task reports %+v, want one per task", reports)
	}
	if n := runnertest.Pending(t, s.SQS, s.DLQ); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	var closed []string
	for _, sum := range s.Logs.Summaries() {
		if sum["outcome"] == "task_closed" {
			closed = append(closed, fmt.Sprint(sum["catalog_id"], " ", sum["task_report_error"], " ", sum["level"]))
		}
	}
	slices.Sort(closed)
	if want := []string{"again TaskTimedOut WARN", "again-bad TaskTimedOut WARN"}; !slices.Equal(closed, want) {
		t.Errorf("summaries ending task_closed %q, want %q", closed, want)
	}
}

// TestSchemasAModelCannotCarryAreRefused: a go-sdk server lists a good
// tool and tools whose schemas break a rule; those are refused with the
// rule, the good one is stored, and the remote $ref is never fetched.
func TestSchemasAModelCannotCarryAreRefused(t *testing.T) {
	s := newStack(t)
	var fetched atomic.Int64
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	t.Cleanup(remote.Close)
	server := sdk.NewServer(&sdk.Implementation{Name: "schemas", Version: "1"}, &sdk.ServerOptions{})
	noop := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	for name, schema := range map[string]string{
		"good":     `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`,
		"remote":   `{"type":"object","properties":{"n":{"$ref":"` + remote.URL + `/n.json"}}}`,
		"dangling": `{"type":"object","properties":{"n":{"$ref":"#/$defs/missing"}}}`,
		"cyclic":   `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"n":{"$ref":"#/$defs/a"}}}`,
	} {
		server.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(schema)}, noop)
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)

	out, err := s.invoke(t, []byte(body(map[string]any{"catalog_id": "schemas", "server_url": srv.URL})))
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*Result)
	reasons := map[string]string{}
	for _, r := range res.Refused {
		reasons[r.Name] = r.Reason
	}
	for name, rule := range map[string]string{"remote": "remote-ref", "dangling": "dangling-ref", "cyclic": "cyclic-ref"} {
		if !strings.Contains(reasons[name], "input_schema: schema refused: "+rule) {
			t.Errorf("%s refused for %q, want the %s rule", name, reasons[name], rule)
		}
	}
	if res.ToolCount != 1 {
		t.Errorf("tool_count %d, want 1 (good)", res.ToolCount)
	}
	if c, err := s.Store.Get(t.Context(), "schemas"); err != nil || len(c.Tools) != 1 || c.Tools[0].Name != "good" {
		t.Errorf("stored %+v, %v; want only good", c, err)
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the remote $ref was fetched %d times", n)
	}
}
