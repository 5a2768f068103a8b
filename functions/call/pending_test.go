package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// invoke runs one call request directly and returns its output as JSON
// and its wire error type ("" on success).
func invoke(t *testing.T, s *stack, fields map[string]any) (string, string) {
	t.Helper()
	out, err := s.Invoke(t, []byte(callBody(fields)), time.Minute)
	if err != nil {
		return "", runnertest.WireType(err)
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		t.Fatal(merr)
	}
	return string(b), ""
}

func decodeAnswer(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return m
}

func methodCount(srv *mcptest.Server, method string) int {
	n := 0
	for _, m := range srv.Methods() {
		if m == method {
			n++
		}
	}
	return n
}

// TestTaskCompletesAfterPolls: a task that completes on its third
// tasks/get costs one tools/call and three polls, each continuation answers
// pending with the floor, and the final tool_result is byte-identical to
// the same tool answering synchronously.
func TestTaskCompletesAfterPolls(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 2, PollIntervalMs: 2000}})
	req := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "long-1"}

	var out string
	for i := range 4 {
		var typ string
		out, typ = invoke(t, s, req)
		if typ != "" {
			t.Fatalf("invocation %d: %s", i+1, typ)
		}
		a := decodeAnswer(t, out)
		if i < 3 {
			if a["type"] != TypePending || a["status"] != "working" || a["poll_after_seconds"] != float64(15) {
				t.Fatalf("invocation %d = %s, want pending working with poll_after_seconds 15 (the floor)", i+1, out)
			}
			if _, ok := a["expires_at"]; ok {
				t.Errorf("expires_at without a TTL: %s", out)
			}
		}
	}
	if got, want := methodCount(srv, "tools/call"), 1; got != want {
		t.Errorf("tools/call sent %d times, want %d", got, want)
	}
	if got, want := methodCount(srv, "tasks/get"), 3; got != want {
		t.Errorf("tasks/get sent %d times, want %d", got, want)
	}

	// The same tool on a legacy-era server answers synchronously.
	legacy := mcptest.NewServer(t, mcptest.Options{Tasks: &mcptest.Tasks{}})
	sync, typ := invoke(t, s, map[string]any{"server_url": legacy.URL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "sync-1"})
	if typ != "" {
		t.Fatal(typ)
	}
	if out != sync {
		t.Errorf("task result %s\nsync result %s\nwant byte-identical", out, sync)
	}
	// Completed: a further continuation replays it without a request.
	again, _ := invoke(t, s, req)
	if again != out || methodCount(srv, "tasks/get") != 3 {
		t.Errorf("replay %s (tasks/get %d), want %s and no request", again, methodCount(srv, "tasks/get"), out)
	}
}

// TestInputRequiredTwoRounds: a tool answering input_required directly
// gets one tools/call per round with the responses and the stored
// requestState; resuming a finished call replays it.
func TestInputRequiredTwoRounds(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{}})
	req := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "tool_use_id": "toolu_ask"}

	out, typ := invoke(t, s, req)
	a := decodeAnswer(t, out)
	if typ != "" || a["status"] != "input_required" || !strings.Contains(out, `"q1"`) || !strings.Contains(out, `"elicitation/create"`) {
		t.Fatalf("round 1 = %s %s, want input_required asking q1", out, typ)
	}
	if _, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "tool_use_id": "toolu_ask", "arguments": map[string]int{"x": 1}}); typ != "invalid_request_error" {
		t.Errorf("continuation with other arguments: %q, want invalid_request_error", typ)
	}
	if again, _ := invoke(t, s, req); again != out {
		t.Errorf("a poll while waiting for input = %s, want the same pending answer %s", again, out)
	}
	if n := methodCount(srv, "tools/call"); n != 1 {
		t.Fatalf("tools/call sent %d times before any input, want 1", n)
	}

	withInput := func(key, name string) map[string]any {
		r := map[string]any{"input_responses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]string{"name": name}}}}
		for k, v := range req {
			r[k] = v
		}
		return r
	}
	out, _ = invoke(t, s, withInput("q1", "a"))
	if !strings.Contains(out, `"q2"`) {
		t.Fatalf("round 2 = %s, want input_required asking q2", out)
	}
	if again, _ := invoke(t, s, withInput("q1", "a")); again != out {
		t.Errorf("resuming round 1 again = %s, want the same pending answer %s", again, out)
	}
	final, typ := invoke(t, s, withInput("q2", "b"))
	if typ != "" || !strings.Contains(final, `"type":"tool_result"`) || !strings.Contains(final, "answers: a, b") {
		t.Fatalf("round 3 = %s %s, want the tool result", final, typ)
	}
	again, _ := invoke(t, s, withInput("q2", "b"))
	if again != final {
		t.Errorf("resuming a finished call = %s, want the replay %s", again, final)
	}
	if n := methodCount(srv, "tools/call"); n != 3 {
		t.Errorf("tools/call sent %d times, want 3 (one per round)", n)
	}
}

// TestTaskInputUpdateAndCancel: a task's input requests are answered with
// one tasks/update; a cancel sends one tasks/cancel and records an
// is_error result; input for a call not waiting for input is refused.
func TestTaskInputUpdateAndCancel(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{}})

	ask := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskAsk, "idempotency_key": "ask-1"}
	invoke(t, s, ask) // created: working
	out, _ := invoke(t, s, ask)
	if !strings.Contains(out, `"input_required"`) || !strings.Contains(out, `"name"`) {
		t.Fatalf("poll = %s, want input_required", out)
	}
	ask["input_responses"] = map[string]any{"name": map[string]any{"action": "accept", "content": map[string]string{"name": "Luca"}}}
	out, typ := invoke(t, s, ask)
	if typ != "" || !strings.Contains(out, "Hello, Luca!") {
		t.Fatalf("update = %s %s, want the result", out, typ)
	}
	if n := methodCount(srv, "tasks/update"); n != 1 {
		t.Errorf("tasks/update sent %d times, want 1", n)
	}

	forever := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskForever, "idempotency_key": "forever-1"}
	invoke(t, s, forever)
	forever["input_responses"] = map[string]any{"x": map[string]any{}}
	if _, typ := invoke(t, s, forever); typ != "invalid_request_error" {
		t.Errorf("input for a working task: %q, want invalid_request_error", typ)
	}
	delete(forever, "input_responses")
	forever["cancel"] = true
	out, typ = invoke(t, s, forever)
	if typ != "" || !strings.Contains(out, `"is_error":true`) || !strings.Contains(out, "cancel") {
		t.Fatalf("cancel = %s %s, want an is_error result saying it was cancelled", out, typ)
	}
	if n := methodCount(srv, "tasks/cancel"); n != 1 {
		t.Errorf("tasks/cancel sent %d times, want 1", n)
	}
	if again, _ := invoke(t, s, forever); again != out {
		t.Errorf("after cancel = %s, want the recorded %s", again, out)
	}

	if _, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": "echo", "idempotency_key": "fresh", "cancel": true}); typ != "invalid_request_error" {
		t.Errorf("cancel with nothing pending: %q, want invalid_request_error", typ)
	}
}

// TestTaskEndsUnknownOrExpired: a task the server no longer knows, and a
// task past its TTL, end as recorded is_error results.
func TestTaskEndsUnknownOrExpired(t *testing.T) {
	s := newStack(t, nil)
	gone := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
		if method == "tools/call" {
			r["taskId"] = "forgotten"
		}
	}}})
	req := map[string]any{"server_url": gone.URL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "gone-1"}
	invoke(t, s, req)
	out, typ := invoke(t, s, req)
	if typ != "" || !strings.Contains(out, `"is_error":true`) || !strings.Contains(out, "not found") {
		t.Errorf("unknown task = %s %s, want an is_error result saying so", out, typ)
	}

	expiring := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{TTLMs: 1}})
	req = map[string]any{"server_url": expiring.URL, "tool_name": mcptest.ToolTaskForever, "idempotency_key": "ttl-1"}
	first, _ := invoke(t, s, req)
	if !strings.Contains(first, `"expires_at"`) {
		t.Errorf("pending answer %s, want expires_at", first)
	}
	time.Sleep(1100 * time.Millisecond) // createdAt has one-second resolution
	out, typ = invoke(t, s, req)
	if typ != "" || !strings.Contains(out, `"is_error":true`) || !strings.Contains(out, "expired") {
		t.Errorf("expired task = %s %s, want an is_error result saying so", out, typ)
	}
	if n := methodCount(expiring, "tasks/get"); n != 0 {
		t.Errorf("tasks/get sent %d times for an expired task, want 0", n)
	}
}

// TestSQSWithoutTaskTokenCallsSynchronously: without a Redeliverer nobody
// can continue a pending call from a plain SQS message, so it declares no
// Tasks extension and the server answers in one tools/call.
func TestSQSWithoutTaskTokenCallsSynchronously(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 5}})
	ev := runnertest.Payload(runnertest.SQSEvent(callBody(map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskSleep})))
	out, err := s.Invoke(t, ev, time.Minute)
	if err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v", out, err)
	}
	if n := srv.CallCount(mcptest.ToolTaskSleep); n != 1 || methodCount(srv, "tasks/get") != 0 {
		t.Errorf("task_sleep ran %d times synchronously, tasks/get %d; want 1 and 0", n, methodCount(srv, "tasks/get"))
	}
}

// TestConcurrentContinuationsSendOneRequest: two continuations with the
// same input responses at once run the round once; a task's concurrent
// polls never send a second tools/call.
func TestConcurrentContinuationsSendOneRequest(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 100}})
	for _, tc := range []struct {
		tool, key string
		extra     map[string]any
		wantCalls int
	}{
		{mcptest.ToolTaskSleep, "race-task", nil, 1},
		{mcptest.ToolAskTwice, "race-input", map[string]any{"input_responses": map[string]any{"q1": map[string]any{"action": "accept", "content": map[string]string{"name": "a"}}}}, 2},
	} {
		req := map[string]any{"server_url": srv.URL, "tool_name": tc.tool, "idempotency_key": tc.key}
		before := methodCount(srv, "tools/call")
		invoke(t, s, req)
		for k, v := range tc.extra {
			req[k] = v
		}
		var wg sync.WaitGroup
		outs, types := make([]string, 4), make([]string, 4)
		for i := range outs {
			wg.Go(func() { outs[i], types[i] = invoke(t, s, req) })
		}
		wg.Wait()
		for i := range outs {
			if types[i] != "" && types[i] != "internal_error" || types[i] == "" && !strings.Contains(outs[i], TypePending) {
				t.Errorf("%s continuation %d = %s %q, want a pending answer or internal_error (in progress)", tc.tool, i, outs[i], types[i])
			}
		}
		if got := methodCount(srv, "tools/call") - before; got != tc.wantCalls {
			t.Errorf("%s: tools/call sent %d times, want %d", tc.tool, got, tc.wantCalls)
		}
	}
}

// TestPollAfterBounds: poll_after_seconds is the server's pollIntervalMs,
// at least the floor and at most 900, whatever the server sends.
func TestPollAfterBounds(t *testing.T) {
	s := newStack(t, nil)
	for _, tc := range []struct {
		name string
		ms   float64
		want string
	}{
		{"zero", 0, `"poll_after_seconds":15`},
		{"under the floor", 2000, `"poll_after_seconds":15`},
		{"over the floor", 61500, `"poll_after_seconds":62`}, // rounded up
		{"1e12", 1e12, `"poll_after_seconds":900`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
				r["pollIntervalMs"] = tc.ms
			}}})
			out, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskForever, "idempotency_key": "poll-" + strings.ReplaceAll(tc.name, " ", "-")})
			if typ != "" || !strings.Contains(out, tc.want) {
				t.Errorf("answer = %s %s, want %s", out, typ, tc.want)
			}
		})
	}
}

// TestPendingAnswerIsScrubbed: input requests and a status message that
// echo the vault's token reach the caller with it redacted.
func TestPendingAnswerIsScrubbed(t *testing.T) {
	const token = "tok-pending-s3cr3t"
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, BearerToken: token, Tasks: &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
		if method == "tools/call" {
			r["inputRequests"] = map[string]any{"q1": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "your token is " + token}}}
		}
	}}})
	vaulttest.CreateSecret(t, s.Secrets, s.Prefix+"pending", vault.Credential{ServerURL: srv.URL, Token: token})
	out, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "idempotency_key": "scrub-1", "vault_ids": []string{"pending"}})
	if typ != "" || !strings.Contains(out, `"input_required"`) || !strings.Contains(out, "[redacted]") {
		t.Fatalf("answer = %s %s, want input_required with the token redacted", out, typ)
	}
	if strings.Contains(out, token) {
		t.Errorf("the token reached the pending answer: %s", out)
	}
}

// TestInputRoundsCap: a server that asks for input forever gets
// MaxInputRounds rounds; the next continuation is a recorded is_error
// result and sends nothing.
func TestInputRoundsCap(t *testing.T) {
	s := newStack(t, nil)
	var mu sync.Mutex
	asked := 0
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		clear(r)
		r["resultType"], r["requestState"] = "input_required", "again"
		r["inputRequests"] = map[string]any{fmt.Sprintf("k%d", asked): map[string]any{"method": "roots/list"}}
	}}})
	req := map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "idempotency_key": "rounds-1"}
	invoke(t, s, req)
	for i := 1; i <= MaxInputRounds+1; i++ {
		req["input_responses"] = map[string]any{fmt.Sprintf("k%d", i): map[string]any{"roots": []any{}}}
		out, typ := invoke(t, s, req)
		switch {
		case i <= MaxInputRounds && (typ != "" || !strings.Contains(out, fmt.Sprintf(`"k%d"`, i+1))):
			t.Fatalf("round %d = %s %s, want input_required asking k%d", i, out, typ, i+1)
		case i > MaxInputRounds && (typ != "" || !strings.Contains(out, `"is_error":true`)):
			t.Fatalf("round %d = %s %s, want a recorded is_error result", i, out, typ)
		}
	}
	if n := methodCount(srv, "tools/call"); n != MaxInputRounds+1 {
		t.Errorf("tools/call sent %d times, want %d (the first and %d rounds)", n, MaxInputRounds+1, MaxInputRounds)
	}
}

// TestRunningElsewhere: a direct duplicate that finds another delivery's
// lease answers pending working, to poll when that lease runs out (at
// least the floor, at most 900 s), and calls nothing; an SQS duplicate
// still goes back to its queue (TestAtMostOnce).
func TestRunningElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lease   time.Duration
		elapsed time.Duration
		floor   time.Duration
		skew    time.Duration // the handler's clock ahead of the ledger's
		want    int
	}{
		{"what is left of the lease", 5 * time.Minute, 100 * time.Second, 0, 0, 200},
		{"a part of a second is a whole one", 5 * time.Minute, 299*time.Second + 500*time.Millisecond, time.Second, 0, 1},
		{"at least the floor", 5 * time.Minute, 295 * time.Second, 0, 0, 15},
		{"a lease over by this clock: the floor", 5 * time.Minute, 0, 0, 10 * time.Minute, 15},
		{"at most 900", 20 * time.Minute, 0, 0, 0, 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
			e.ledger = ledger.NewMemory(tc.lease)
			e.ledger.Now = func() time.Time { return now }
			e.handler.Ledger = e.ledger
			e.handler.Now = func() time.Time { return now.Add(tc.skew) }
			e.handler.TaskPollMin = tc.floor
			if _, err := e.ledger.Peer().Begin(t.Context(), "toolu_elsewhere"); err != nil {
				t.Fatal(err)
			}
			now = now.Add(tc.elapsed)
			got := e.direct(t, request(map[string]any{"tool_use_id": "toolu_elsewhere"}))
			want := fmt.Sprintf(`{"type":"mcp_call_pending","status":"working","poll_after_seconds":%d,"status_message":"another delivery of this call is still running"}`, tc.want)
			if got.Error != nil || string(got.Result) != want {
				t.Errorf("answer %s (error %+v), want %s", got.Result, got.Error, want)
			}
			if len(e.server.calls) != 0 {
				t.Errorf("the duplicate called %v", e.server.calls)
			}
			if s := got.Summaries[0]; s["in_progress_elsewhere"] != true || s["outcome"] != "succeeded" {
				t.Errorf("summary = %v", s)
			}
		})
	}
}
