package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// substitutions stand in for the template's DefinitionSubstitutions.
var substitutions = map[string]string{
	"DiscoverFunctionArn":   "arn:aws:lambda:us-east-1:123456789012:function:mcpfn-discover",
	"CallFunctionArn":       "arn:aws:lambda:us-east-1:123456789012:function:mcpfn-call",
	"InputRequestsQueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-InputRequestsQueue",
	"MaxCallWaitSeconds":    "86400",
	"InputTimeoutSeconds":   "86400",
}

// callTasks maps every Task state of the call machines that invokes the
// call function to url.
func callTasks(url string) map[string]string {
	return map[string]string{"CallTool": url, "AnswerTool": url, "Cancel": url}
}

// execution is what e2e/sfn/run.mjs prints, and the execution ARN
// runStateMachine gave it ($$.Execution.Id).
type execution struct {
	ID     string          `json:"-"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Cause  string          `json:"cause"`
	Events []event         `json:"events"`
	// Invocations are the payloads the Task states sent their functions,
	// in order: a retry is one more.
	Invocations []invocation `json:"invocations"`
}

type invocation struct {
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload"`
}

type event struct {
	Type        string          `json:"type"`
	State       string          `json:"state"`
	Error       string          `json:"error"`
	ErrorEquals []string        `json:"errorEquals"`
	Input       json.RawMessage `json:"input"` // of a StateEntered event
}

// count returns how many events have type typ and state state.
func (e execution) count(typ, state string) int {
	n := 0
	for _, ev := range e.Events {
		if ev.Type == typ && ev.State == state {
			n++
		}
	}
	return n
}

// node returns the Node 22 binary make test-e2e installs, or skips: plain
// `go test ./...` does not install npm packages.
func node(t *testing.T) string {
	t.Helper()
	n := os.Getenv("MCPFN_E2E_NODE")
	if n == "" {
		t.Skip("state machine tests need Node 22 and aws-local-stepfunctions from e2e/package.json: run make test-e2e")
	}
	return n
}

// runStateMachine runs statemachine/<name>.asl.json on input in
// aws-local-stepfunctions, each named Task state invoking its RIE. Each run
// gets a fresh execution ARN as $$.Execution.Id, as Step Functions gives
// every execution its own.
func runStateMachine(t *testing.T, name string, input any, tasks map[string]string) execution {
	t.Helper()
	return runStateMachineAs(t, name, rand.Text(), input, tasks)
}

// runStateMachineAs is runStateMachine for an execution named execName: two
// runs under one name stand for one execution run twice (Express runs an
// asynchronous execution at least once) or a caller retrying a start.
func runStateMachineAs(t *testing.T, name, execName string, input any, tasks map[string]string) execution {
	t.Helper()
	return runMachine(t, machineRun{name: name, execName: execName, input: input, tasks: tasks})
}

// machineRun is one run of a state machine: runStateMachineAs's arguments,
// plus stand-ins for queues (e2e/sfn/run.mjs), substitutions that differ
// from substitutions, and a wait override (nil: Wait states wait).
type machineRun struct {
	name, execName string
	input          any
	tasks, queues  map[string]string
	subs           map[string]string
	waitMs         *int
}

// taskToken is the $$.Task.Token every run's waitForTaskToken states see.
const taskToken = "AAAA-task-token-of-the-e2e-run"

func runMachine(t *testing.T, r machineRun) execution {
	t.Helper()
	nodeBin := node(t)
	name, execName := r.name, r.execName
	if execName == "" {
		execName = rand.Text()
	}
	subs := maps.Clone(substitutions)
	maps.Copy(subs, r.subs)
	id := "arn:aws:states:us-east-1:123456789012:execution:mcpfn-" + name + ":" + execName
	cfg := map[string]any{
		"definition":    "../statemachine/" + name + ".asl.json",
		"substitutions": subs,
		"input":         r.input,
		"tasks":         r.tasks,
		"queues":        r.queues,
		"context": map[string]any{
			"Execution":    map[string]any{"Id": id, "Name": execName},
			"StateMachine": map[string]any{"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:mcpfn-" + name, "Name": "mcpfn-" + name},
			"Task":         map[string]any{"Token": taskToken},
		},
	}
	if r.waitMs != nil {
		cfg["waitMs"] = *r.waitMs
	}
	input := mustJSON(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "sfn/run.mjs")
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run %s: %v\n%s", name, err, &stderr)
	}
	ex := execution{ID: id}
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatalf("run %s printed %s: %v\n%s", name, out, err, &stderr)
	}
	return ex
}

// flakyServer serves mcptest on loopback but closes the first drop
// connections as soon as they are accepted: the client sees the connection
// fail, as when a server restarts.
func flakyServer(t *testing.T, drop int32) (string, *mcptest.Counters) {
	t.Helper()
	h, counters := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &dropListener{Listener: ln}
	fl.drop.Store(drop)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(fl) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", counters
}

type dropListener struct {
	net.Listener
	drop atomic.Int32
}

func (l *dropListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.drop.Add(-1) < 0 {
			return c, nil
		}
		c.Close()
	}
}

// TestStateMachineHappyPath discovers two servers of different protocol eras
// and an auth-protected one through the discover state machine's Map, then
// runs a tool call through the call state machine.
func TestStateMachineHappyPath(t *testing.T) {
	node(t)
	example := startExampleServer(t, false)
	stateless := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	locked := mcptest.NewServer(t, mcptest.Options{BearerToken: bearer})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, example), allowOnly(t, stateless.URL), allowOnly(t, locked.URL)}})

	ex := runStateMachine(t, "discover", map[string]any{"servers": []map[string]any{
		{"catalog_id": "example", "server_url": example},
		{"catalog_id": "stateless", "server_url": stateless.URL},
		{"catalog_id": "locked", "server_url": locked.URL},
	}}, map[string]string{"Discover": s.discover.URL()})
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("discover execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
	}
	var outcomes []struct {
		CatalogID string `json:"catalog_id"`
		OK        bool   `json:"ok"`
		ErrorType string `json:"error_type"`
		Cause     string `json:"cause"`
		Result    struct {
			ToolCount       int    `json:"tool_count"`
			ProtocolVersion string `json:"protocol_version"`
		} `json:"result"`
	}
	decode(t, ex.Output, &outcomes)
	if len(outcomes) != 3 {
		t.Fatalf("discover output %s, want 3 outcomes", ex.Output)
	}
	for i, want := range []struct {
		id      string
		ok      bool
		tools   int
		version string
		errType string
	}{
		{"example", true, 3, "2025-11-25", ""},
		{"stateless", true, 10, "2026-07-28", ""},
		{"locked", false, 0, "", "mcp_authentication_failed_error"},
	} {
		got := outcomes[i]
		if got.CatalogID != want.id || got.OK != want.ok || got.Result.ToolCount != want.tools ||
			got.Result.ProtocolVersion != want.version || got.ErrorType != want.errType {
			t.Errorf("outcome %d = %+v, want %+v", i, got, want)
		}
	}
	if !strings.Contains(outcomes[2].Cause, `"errorType":"mcp_authentication_failed_error"`) {
		t.Errorf("the failure's cause %q is not the function's error payload", outcomes[2].Cause)
	}
	if n := ex.count("StateRetried", "Discover"); n != 0 {
		t.Errorf("%d retries, want none: authentication failures are terminal", n)
	}
	checkCatalog(t, s, "example", "2025-11-25")

	ex = runStateMachine(t, "call", map[string]any{
		"server_url": example, "tool_name": "calculate", "arguments": map[string]any{"op": "multiply", "a": 6, "b": 7},
		"tool_use_id": "toolu_sfn_happy", "catalog_id": "example",
	}, callTasks(s.call.URL()))
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("call execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
	}
	checkToolResult(t, ex.Output, "toolu_sfn_happy", false, "42")
}

// TestStateMachineRetriesConnectionFailure: the server drops the first two
// connections, so the first attempt fails with mcp_connection_failed_error
// (one drop is not enough: the client follows a failed first request with
// initialize on a new connection); the state machine retries, and the
// second attempt succeeds.
func TestStateMachineRetriesConnectionFailure(t *testing.T) {
	node(t)
	server, counters := flakyServer(t, 2)
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, server)}})
	ex := runStateMachine(t, "call", map[string]any{
		"server_url": server, "tool_name": "echo", "arguments": map[string]any{"text": "second time lucky"},
		"tool_use_id": "toolu_sfn_retry",
	}, callTasks(s.call.URL()))
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("call execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
	}
	checkToolResult(t, ex.Output, "toolu_sfn_retry", false, "second time lucky")
	var retried []event
	for _, ev := range ex.Events {
		if ev.Type == "StateRetried" || ev.Type == "StateFailed" {
			retried = append(retried, ev)
		}
	}
	if len(retried) != 2 || retried[0].Error != "mcp_connection_failed_error" ||
		retried[1].Type != "StateRetried" || !slices.Contains(retried[1].ErrorEquals, "mcp_connection_failed_error") {
		t.Errorf("failure and retry events %+v, want one mcp_connection_failed_error retried by its retrier", retried)
	}
	if n := counters.CallCount("echo"); n != 1 {
		t.Errorf("echo ran %d times, want 1", n)
	}
}

// TestStateMachineCatchesTerminalAuthFailure: a 401 is not retried; Catch
// routes it to CallFailed, whose error is the wire type.
func TestStateMachineCatchesTerminalAuthFailure(t *testing.T) {
	node(t)
	locked := mcptest.NewServer(t, mcptest.Options{BearerToken: bearer})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, locked.URL)}})
	ex := runStateMachine(t, "call", map[string]any{
		"server_url": locked.URL, "tool_name": "echo", "arguments": map[string]any{"text": "x"},
		"tool_use_id": "toolu_sfn_auth",
	}, callTasks(s.call.URL()))
	if ex.Status != "FAILED" || ex.Error != "mcp_authentication_failed_error" {
		t.Fatalf("call execution %s with error %q, want FAILED with mcp_authentication_failed_error", ex.Status, ex.Error)
	}
	if !strings.Contains(ex.Cause, "401") {
		t.Errorf("cause %q does not carry the function's message", ex.Cause)
	}
	if n := ex.count("StateRetried", "CallTool"); n != 0 {
		t.Errorf("%d retries of a terminal failure, want none", n)
	}
	var caught *event
	for i, ev := range ex.Events {
		if ev.Type == "StateCaught" && ev.State == "CallTool" {
			caught = &ex.Events[i]
		}
	}
	if caught == nil || !slices.Contains(caught.ErrorEquals, "mcp_authentication_failed_error") {
		t.Errorf("caught by %+v, want the catcher that names mcp_authentication_failed_error", caught)
	}
	if ex.count("StateEntered", "CallFailed") != 1 {
		t.Errorf("the execution did not enter CallFailed: %+v", ex.Events)
	}
	if n := locked.CallCount("echo"); n != 0 {
		t.Errorf("echo ran %d times behind a 401", n)
	}
}

// TestStateMachineShortCallTransitions pins what a short call costs in each
// call machine: four states entered (Prepare, CallTool, Route, Done), the
// four transitions Standard bills (docs/operations.md, cost), and the
// execution-keyed at-most-once: the same execution run again
// replays the recorded result without calling the tool, a new execution
// calls it again. Without tool_use_id the machine's idempotency_key is the
// call's key.
func TestStateMachineShortCallTransitions(t *testing.T) {
	node(t)
	for _, machine := range []string{"call", "call-express"} {
		t.Run(machine, func(t *testing.T) {
			server := mcptest.NewServer(t, mcptest.Options{Stateless: true})
			s := newStack(t, stackOptions{allow: []string{allowOnly(t, server.URL)}})
			input := map[string]any{"server_url": server.URL, "tool_name": "echo", "arguments": map[string]any{"text": "once"}}
			tasks := callTasks(s.call.URL())
			name := rand.Text()
			var outputs []string
			for _, execName := range []string{name, name, rand.Text()} {
				ex := runStateMachineAs(t, machine, execName, input, tasks)
				if ex.Status != "SUCCEEDED" {
					t.Fatalf("execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
				}
				checkToolResult(t, ex.Output, "", false, "once")
				var entered []string
				for _, ev := range ex.Events {
					if ev.Type == "StateEntered" {
						entered = append(entered, ev.State)
					}
				}
				if want := []string{"Prepare", "CallTool", "Route", "Done"}; !slices.Equal(entered, want) {
					t.Errorf("states entered %v, want %v: four transitions per short call", entered, want)
				}
				wantKey := ex.ID // Standard: the execution ARN
				if machine == "call-express" {
					wantKey = "arn:aws:states:us-east-1:123456789012:stateMachine:mcpfn-call-express:" + execName
				}
				var sent struct {
					Key string `json:"idempotency_key"`
				}
				if len(ex.Invocations) != 1 {
					t.Fatalf("%d invocations, want 1", len(ex.Invocations))
				}
				decode(t, ex.Invocations[0].Payload, &sent)
				if sent.Key != wantKey {
					t.Errorf("idempotency_key %q, want %q", sent.Key, wantKey)
				}
				outputs = append(outputs, string(ex.Output))
			}
			if outputs[1] != outputs[0] {
				t.Errorf("the rerun answered %s, want the recorded %s", outputs[1], outputs[0])
			}
			if n := server.CallCount("echo"); n != 2 {
				t.Errorf("echo ran %d times for two executions (one of them run twice), want 2", n)
			}
		})
	}
}
