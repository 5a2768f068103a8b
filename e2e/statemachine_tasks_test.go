package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// inputMessage is what CallStateMachine's AskForInput sends to
// InputRequestsQueue.
type inputMessage struct {
	QueueURL    string `json:"QueueUrl"`
	MessageBody struct {
		TaskToken     string                     `json:"task_token"`
		Execution     string                     `json:"execution"`
		Call          map[string]any             `json:"call"`
		InputRequests map[string]json.RawMessage `json:"input_requests"`
		Approval      map[string]any             `json:"approval_required"`
	} `json:"MessageBody"`
}

// platform stands in for InputRequestsQueue and the platform reading it
// (e2e/sfn/run.mjs): answer returns the HTTP status and body of each
// message's answer (200: SendTaskSuccess's output; else SendTaskFailure's
// {"error", "cause"}); a nil answer never answers.
type platform struct {
	mu       sync.Mutex
	messages []inputMessage
	url      string
}

func newPlatform(t *testing.T, answer func(m inputMessage) (int, any)) *platform {
	t.Helper()
	p := &platform{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m inputMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, `{"error":"bad_message"}`, http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.messages = append(p.messages, m)
		p.mu.Unlock()
		if answer == nil {
			<-r.Context().Done() // the state's timeout fires first
			return
		}
		status, body := answer(m)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *platform) received() []inputMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.messages)
}

// acceptAll answers every input request of m with {"name": <its key>}.
func acceptAll(m inputMessage) (int, any) {
	responses := map[string]any{}
	for k := range m.MessageBody.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]string{"name": k}}
	}
	return http.StatusOK, map[string]any{"input_responses": responses}
}

func entered(ex execution) []string {
	var out []string
	for _, ev := range ex.Events {
		if ev.Type == "StateEntered" {
			out = append(out, ev.State)
		}
	}
	return out
}

func machineID(execName string) string {
	return "arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:" + execName
}

// TestStateMachinePendingTaskCompletes: a task that completes on its third
// poll runs through CallStateMachine's loop: one tools/call and three
// tasks/get, each CallTool sending the same request under the execution's
// key, Wait states of poll_after_seconds (the server's 2000 ms, above the
// 1 s floor) that really wait, and an output byte-identical to the same
// tool answering synchronously.
func TestStateMachinePendingTaskCompletes(t *testing.T) {
	node(t)
	url, counters := taskServer(t, &mcptest.Tasks{Polls: 2, PollIntervalMs: 2000})
	legacyURL := legacyTaskServer(t)
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url), allowOnly(t, legacyURL)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=1"}})

	start := time.Now()
	ex := runMachine(t, machineRun{name: "call", input: map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep}, tasks: callTasks(s.call.URL())})
	elapsed := time.Since(start)
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
	}
	want := []string{"Prepare", "CallTool", "Route"}
	for range 3 {
		want = append(want, "Tally", "Poll", "CallTool", "Route")
	}
	want = append(want, "Done")
	if got := entered(ex); !slices.Equal(got, want) {
		t.Errorf("states entered %v\nwant %v", got, want)
	}
	for _, ev := range ex.Events {
		if ev.Type == "StateEntered" && ev.State == "Poll" && !strings.Contains(string(ev.Input), `"poll_after_seconds":2`) {
			t.Errorf("Poll entered with %s, want poll_after_seconds 2", ev.Input)
		}
	}
	if elapsed < 6*time.Second {
		t.Errorf("the execution took %v, want at least the three 2 s waits", elapsed)
	}
	if n, g := countMethod(counters, "tools/call"), countMethod(counters, "tasks/get"); n != 1 || g != 3 {
		t.Errorf("methods %v, want 1 tools/call and 3 tasks/get", counters.Methods())
	}
	if len(ex.Invocations) != 4 {
		t.Fatalf("%d invocations, want 4", len(ex.Invocations))
	}
	for _, inv := range ex.Invocations {
		var sent struct {
			Key string `json:"idempotency_key"`
		}
		decode(t, inv.Payload, &sent)
		if inv.State != "CallTool" || string(inv.Payload) != string(ex.Invocations[0].Payload) || sent.Key != ex.ID {
			t.Errorf("invocation %s %s, want CallTool with the first request and key %s", inv.State, inv.Payload, ex.ID)
		}
	}
	sync := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": legacyURL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "sfn-sync-1"}))
	if strings.TrimSpace(string(ex.Output)) != strings.TrimSpace(string(sync.Payload)) {
		t.Errorf("task result %s\nsynchronous %s\nwant byte-identical", ex.Output, sync.Payload)
	}
}

// TestStateMachineInputRequests: both kinds of input requests go to the
// platform through InputRequestsQueue with the task token, the execution
// and the call request; its SendTaskSuccess input_responses reach the
// server: ask_twice (input_required on tools/call, two rounds) costs one
// tools/call per round, task_ask (a task) one tasks/update.
func TestStateMachineInputRequests(t *testing.T) {
	node(t)
	url, counters := taskServer(t, &mcptest.Tasks{})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=1"}})
	for _, tc := range []struct {
		tool, text      string
		rounds, calls   int
		updates         int
		wantFirstInputs string
	}{
		{mcptest.ToolAskTwice, "answers: q1, q2", 2, 3, 0, "q1"},
		{mcptest.ToolTaskAsk, "Hello, name!", 1, 1, 1, "name"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			calls0, updates0 := countMethod(counters, "tools/call"), countMethod(counters, "tasks/update")
			p := newPlatform(t, acceptAll)
			input := map[string]any{"server_url": url, "tool_name": tc.tool, "tool_use_id": "toolu_sfn_" + tc.tool}
			execName := "input-" + tc.tool
			ex := runMachine(t, machineRun{name: "call", execName: execName, input: input, tasks: callTasks(s.call.URL()),
				queues: map[string]string{"AskForInput": p.url}, waitMs: new(int)})
			if ex.Status != "SUCCEEDED" {
				t.Fatalf("execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
			}
			checkToolResult(t, ex.Output, "toolu_sfn_"+tc.tool, false, tc.text)
			msgs := p.received()
			if len(msgs) != tc.rounds {
				t.Fatalf("%d messages on InputRequestsQueue, want %d", len(msgs), tc.rounds)
			}
			m := msgs[0]
			wantCall := map[string]any{"server_url": url, "tool_name": tc.tool, "tool_use_id": "toolu_sfn_" + tc.tool, "idempotency_key": machineID(execName)}
			if m.QueueURL != substitutions["InputRequestsQueueUrl"] || m.MessageBody.TaskToken != taskToken ||
				m.MessageBody.Execution != machineID(execName) || !jsonEqual(t, m.MessageBody.Call, wantCall) {
				t.Errorf("message %+v, want the queue, the task token, the execution and the call %v", m, wantCall)
			}
			if _, ok := m.MessageBody.InputRequests[tc.wantFirstInputs]; !ok || len(m.MessageBody.InputRequests) != 1 {
				t.Errorf("input_requests %v, want the one key %q", m.MessageBody.InputRequests, tc.wantFirstInputs)
			}
			if n := countMethod(counters, "tools/call") - calls0; n != tc.calls {
				t.Errorf("tools/call sent %d times, want %d", n, tc.calls)
			}
			if n := countMethod(counters, "tasks/update") - updates0; n != tc.updates {
				t.Errorf("tasks/update sent %d times, want %d", n, tc.updates)
			}
			answers := 0
			for _, inv := range ex.Invocations {
				if inv.State == "AnswerTool" {
					answers++
					if !strings.Contains(string(inv.Payload), `"input_responses":{`) {
						t.Errorf("AnswerTool sent %s, want input_responses", inv.Payload)
					}
				}
			}
			if answers != tc.rounds {
				t.Errorf("%d AnswerTool invocations, want %d", answers, tc.rounds)
			}
		})
	}
}

// jsonEqual reports whether a and b marshal to the same JSON.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	return string(mustJSON(t, a)) == string(mustJSON(t, b))
}

// TestStateMachinePendingGivesUp: past MaxCallWaitSeconds of polling, past
// InputTimeoutSeconds without an answer, or on the platform's
// SendTaskFailure, the execution cancels the call once and fails with the
// error that says why; the call's key then replays the recorded
// cancellation without reaching the server.
func TestStateMachinePendingGivesUp(t *testing.T) {
	node(t)
	url, counters := taskServer(t, &mcptest.Tasks{})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=1"}})
	decline := func(inputMessage) (int, any) {
		return http.StatusBadRequest, map[string]string{"error": "user_declined", "cause": "the user closed the dialog"}
	}
	for _, tc := range []struct {
		name, tool string
		answer     func(inputMessage) (int, any)
		subs       map[string]string
		wantError  string
		cancels    int // tasks/cancel: only a task has one
		gets       int // tasks/get: the polls, and task_ask's one before it asks
	}{
		{"wait exceeded", mcptest.ToolTaskForever, acceptAll, map[string]string{"MaxCallWaitSeconds": "3"}, "mcp_call_wait_exceeded_error", 1, 3},
		{"input timeout", mcptest.ToolTaskAsk, nil, map[string]string{"InputTimeoutSeconds": "1"}, "mcp_input_timeout_error", 1, 1},
		{"reply error", mcptest.ToolAskTwice, decline, nil, "mcp_input_reply_error", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls0, cancels0, gets0 := countMethod(counters, "tools/call"), countMethod(counters, "tasks/cancel"), countMethod(counters, "tasks/get")
			p := newPlatform(t, tc.answer)
			input := map[string]any{"server_url": url, "tool_name": tc.tool}
			ex := runMachine(t, machineRun{name: "call", input: input, tasks: callTasks(s.call.URL()),
				queues: map[string]string{"AskForInput": p.url}, subs: tc.subs, waitMs: new(int)})
			if ex.Status != "FAILED" || ex.Error != tc.wantError {
				t.Fatalf("execution %s with %q: %s, want FAILED with %s", ex.Status, ex.Error, ex.Cause, tc.wantError)
			}
			if ex.count("StateEntered", "Cancel") != 1 || ex.count("StateEntered", "Stop") != 1 {
				t.Errorf("states entered %v, want one Cancel, then Stop", entered(ex))
			}
			if n := countMethod(counters, "tasks/cancel") - cancels0; n != tc.cancels {
				t.Errorf("tasks/cancel sent %d times, want %d", n, tc.cancels)
			}
			if n := countMethod(counters, "tasks/get") - gets0; n != tc.gets {
				t.Errorf("tasks/get sent %d times, want %d", n, tc.gets)
			}
			if n := countMethod(counters, "tools/call") - calls0; n != 1 {
				t.Errorf("tools/call sent %d times, want 1", n)
			}
			input["idempotency_key"] = ex.ID
			res := invoke(t, s.call, mustJSON(t, input))
			if !strings.Contains(string(res.Payload), `"is_error":true`) || !strings.Contains(string(res.Payload), "cancel") {
				t.Errorf("the key replays %s %s, want the recorded cancellation", res.Payload, res.ErrorMessage)
			}
			if n := countMethod(counters, "tools/call") - calls0; n != 1 {
				t.Errorf("the replay reached the server: tools/call %d times", n)
			}
		})
	}
}

// TestStateMachineExpressHandsOver: the Express machine ends a call the
// server turned into a task with {"call", "pending"}: the call request with
// the Express key set, and the pending answer. CallStateMachine started
// with that call continues the same task to its result: no second
// tools/call.
func TestStateMachineExpressHandsOver(t *testing.T) {
	node(t)
	url, counters := taskServer(t, &mcptest.Tasks{Polls: 1})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=1"}})
	input := map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep, "arguments": map[string]any{"for": "hand-over"}}
	execName := "handover-1"
	express := runMachine(t, machineRun{name: "call-express", execName: execName, input: input, tasks: callTasks(s.call.URL())})
	if express.Status != "SUCCEEDED" {
		t.Fatalf("express execution %s: %s: %s", express.Status, express.Error, express.Cause)
	}
	var out struct {
		Call    map[string]any  `json:"call"`
		Pending json.RawMessage `json:"pending"`
	}
	decode(t, express.Output, &out)
	wantCall := map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep, "arguments": map[string]any{"for": "hand-over"},
		"idempotency_key": "arn:aws:states:us-east-1:123456789012:stateMachine:mcpfn-call-express:" + execName}
	if !jsonEqual(t, out.Call, wantCall) || !strings.HasPrefix(string(out.Pending), `{"type":"mcp_call_pending","status":"working","poll_after_seconds":1`) {
		t.Fatalf("hand-over %s, want call %v and the pending answer", express.Output, wantCall)
	}
	if got := entered(express); !slices.Equal(got, []string{"Prepare", "CallTool", "Route", "HandOver"}) {
		t.Errorf("express states entered %v", got)
	}

	ex := runMachine(t, machineRun{name: "call", input: out.Call, tasks: callTasks(s.call.URL()), waitMs: new(int)})
	if ex.Status != "SUCCEEDED" {
		t.Fatalf("call execution %s: %s: %s", ex.Status, ex.Error, ex.Cause)
	}
	checkToolResult(t, ex.Output, "", false, "task_sleep: done")
	if n, g := countMethod(counters, "tools/call"), countMethod(counters, "tasks/get"); n != 1 || g != 2 {
		t.Errorf("methods %v, want 1 tools/call (the Express one) and 2 tasks/get", counters.Methods())
	}
	var sent struct {
		Key string `json:"idempotency_key"`
	}
	decode(t, ex.Invocations[0].Payload, &sent)
	if sent.Key != wantCall["idempotency_key"] {
		t.Errorf("the Standard execution keyed the call %q, want the hand-over's %q", sent.Key, wantCall["idempotency_key"])
	}
}
