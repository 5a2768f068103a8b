package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// taskServer serves the fixture's task tools at 2026-07-28 and returns a
// connection to it.
func taskServer(t *testing.T, tasks *mcptest.Tasks) (*mcptest.Server, *Conn) {
	t.Helper()
	s := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: tasks})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	if v := c.Stats().ProtocolVersion; v < modernVersion {
		t.Fatalf("negotiated %q, want 2026-07-28 or later", v)
	}
	return s, c
}

func count(methods []string, m string) int {
	n := 0
	for _, x := range methods {
		if x == m {
			n++
		}
	}
	return n
}

func TestTaskCompletesAfterPollsWithTheSynchronousResult(t *testing.T) {
	const polls = 3
	s, c := taskServer(t, &mcptest.Tasks{Polls: polls, PollIntervalMs: 2000, TTLMs: 60000})
	ctx := testCtx(t, 20*time.Second)

	a, err := c.CallToolTask(ctx, mcptest.ToolTaskSleep, nil, nil)
	if err != nil {
		t.Fatalf("CallToolTask: %v", err)
	}
	if a.Pending == nil || a.Pending.TaskID == "" || a.Pending.Status != StatusWorking {
		t.Fatalf("answer = %+v, want a working task", a)
	}
	if a.Pending.PollInterval != 2*time.Second || a.Pending.TTL != time.Minute || a.Pending.ExpiresAt().IsZero() {
		t.Errorf("pending = %+v, want poll 2s, TTL 1m, an expiry", a.Pending)
	}
	id := a.Pending.TaskID
	n := 0
	for a.Pending != nil {
		n++
		if n > polls+1 {
			t.Fatalf("still pending after %d polls", n)
		}
		if a, err = c.GetTask(ctx, id); err != nil {
			t.Fatalf("GetTask %d: %v", n, err)
		}
	}
	if n != polls+1 {
		t.Errorf("completed on poll %d, want %d", n, polls+1)
	}
	methods := s.Methods()
	if count(methods, "tools/call") != 1 || count(methods, "tasks/get") != polls+1 {
		t.Errorf("methods = %v, want 1 tools/call and %d tasks/get", methods, polls+1)
	}

	// The same tool answering synchronously (no Tasks extension declared)
	// converts to the same CallResult.
	sync, err := c.CallTool(ctx, mcptest.ToolTaskSleep, nil)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if diff := cmp.Diff(sync, a.Result); diff != "" {
		t.Errorf("task result differs from the synchronous one (-sync +task):\n%s", diff)
	}
}

func TestTaskInputRequestsThenUpdate(t *testing.T) {
	s, c := taskServer(t, &mcptest.Tasks{})
	ctx := testCtx(t, 20*time.Second)
	a, err := c.CallToolTask(ctx, mcptest.ToolTaskAsk, json.RawMessage(`{}`), nil)
	if err != nil || a.Pending == nil {
		t.Fatalf("CallToolTask = %+v, %v; want a task", a, err)
	}
	id := a.Pending.TaskID
	if a, err = c.GetTask(ctx, id); err != nil || a.Pending == nil || a.Pending.Status != StatusInputRequired {
		t.Fatalf("GetTask = %+v, %v; want input_required", a, err)
	}
	if !strings.Contains(string(a.Pending.InputRequests), `"elicitation/create"`) {
		t.Errorf("input requests = %s, want the elicitation", a.Pending.InputRequests)
	}
	if err := c.UpdateTask(ctx, id, json.RawMessage(`{"name":{"action":"accept","content":{"name":"Luca"}}}`)); err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if a, err = c.GetTask(ctx, id); err != nil || a.Result == nil {
		t.Fatalf("GetTask = %+v, %v; want the result", a, err)
	}
	if got := a.Result.Content[0].Text; got != "Hello, Luca!" {
		t.Errorf("result text = %q", got)
	}
	if n := count(s.Methods(), "tasks/update"); n != 1 {
		t.Errorf("tasks/update sent %d times, want 1", n)
	}
}

func TestInputRequiredDirectlyTwoRounds(t *testing.T) {
	s, c := taskServer(t, &mcptest.Tasks{})
	ctx := testCtx(t, 20*time.Second)
	a, err := c.CallToolTask(ctx, mcptest.ToolAskTwice, nil, nil)
	if err != nil || a.Pending == nil || a.Pending.TaskID != "" || a.Pending.RequestState != "r1" {
		t.Fatalf("round 1 = %+v, %v; want input_required with state r1", a, err)
	}
	a, err = c.CallToolTask(ctx, mcptest.ToolAskTwice, nil, &Resume{
		InputResponses: json.RawMessage(`{"q1":{"action":"accept","content":{"name":"a"}}}`), RequestState: a.Pending.RequestState})
	if err != nil || a.Pending == nil || !strings.Contains(string(a.Pending.InputRequests), `"q2"`) {
		t.Fatalf("round 2 = %+v, %v; want input_required for q2", a, err)
	}
	a, err = c.CallToolTask(ctx, mcptest.ToolAskTwice, nil, &Resume{
		InputResponses: json.RawMessage(`{"q2":{"action":"accept","content":{"name":"b"}}}`), RequestState: a.Pending.RequestState})
	if err != nil || a.Result == nil {
		t.Fatalf("round 3 = %+v, %v; want the result", a, err)
	}
	if got := a.Result.Content[0].Text; got != "answers: a, b" {
		t.Errorf("result = %q", got)
	}
	if n := count(s.Methods(), "tools/call"); n != 3 {
		t.Errorf("tools/call sent %d times, want 3 (one per round)", n)
	}
}

func TestTaskEndings(t *testing.T) {
	s, c := taskServer(t, &mcptest.Tasks{})
	ctx := testCtx(t, 20*time.Second)
	start := func(tool string) string {
		a, err := c.CallToolTask(ctx, tool, nil, nil)
		if err != nil || a.Pending == nil {
			t.Fatalf("%s: %+v, %v; want a task", tool, a, err)
		}
		return a.Pending.TaskID
	}

	failed := start(mcptest.ToolTaskFail)
	if _, err := c.GetTask(ctx, failed); !errors.Is(err, ErrTaskFailed) || !errors.Is(err, ErrServerAnswered) {
		t.Errorf("failed task: %v, want ErrTaskFailed", err)
	}

	forever := start(mcptest.ToolTaskForever)
	if err := c.CancelTask(ctx, forever); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if n := count(s.Methods(), "tasks/cancel"); n != 1 {
		t.Errorf("tasks/cancel sent %d times, want 1", n)
	}
	if _, err := c.GetTask(ctx, forever); !errors.Is(err, ErrTaskCancelled) {
		t.Errorf("cancelled task: %v, want ErrTaskCancelled", err)
	}

	if _, err := c.GetTask(ctx, "no-such-task"); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("unknown task: %v, want ErrTaskNotFound", err)
	}
}

func TestTaskHostileBounds(t *testing.T) {
	big := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name    string
		tool    string
		poll    bool // the rewrite applies to tasks/get
		rewrite func(r map[string]any)
		wantErr string
		check   func(t *testing.T, p *Pending)
	}{
		{name: "task id of 1 MiB", tool: mcptest.ToolTaskSleep,
			rewrite: func(r map[string]any) { r["taskId"] = big(1 << 20) }, wantErr: "task id"},
		{name: "requestState of 1 MiB", tool: mcptest.ToolAskTwice,
			rewrite: func(r map[string]any) { r["requestState"] = big(1 << 20) }, wantErr: "requestState"},
		{name: "inputRequests over 64 KiB", tool: mcptest.ToolAskTwice,
			rewrite: func(r map[string]any) { r["inputRequests"] = map[string]any{"k": big(100 << 10)} }, wantErr: "inputRequests"},
		{name: "inputRequests of 10 MiB", tool: mcptest.ToolAskTwice,
			rewrite: func(r map[string]any) { r["inputRequests"] = map[string]any{"k": big(10 << 20)} }, wantErr: "budget"},
		{name: "poll interval 1e12", tool: mcptest.ToolTaskSleep,
			rewrite: func(r map[string]any) { r["pollIntervalMs"] = 1e12 },
			check: func(t *testing.T, p *Pending) {
				if p.PollInterval != MaxPollInterval {
					t.Errorf("poll interval = %v, want %v", p.PollInterval, MaxPollInterval)
				}
			}},
		{name: "poll interval 0", tool: mcptest.ToolTaskSleep,
			rewrite: func(r map[string]any) { r["pollIntervalMs"] = 0 },
			check: func(t *testing.T, p *Pending) {
				if p.PollInterval != 0 {
					t.Errorf("poll interval = %v, want 0 (the caller floors it)", p.PollInterval)
				}
			}},
		{name: "status message of 1 MiB", tool: mcptest.ToolTaskSleep,
			rewrite: func(r map[string]any) { r["statusMessage"] = big(1 << 20) },
			check: func(t *testing.T, p *Pending) {
				if len(p.StatusMessage) > MaxStatusMessageBytes {
					t.Errorf("status message is %d bytes", len(p.StatusMessage))
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tasks := &mcptest.Tasks{Rewrite: func(method string, r map[string]any) {
				if method == "tools/call" {
					tc.rewrite(r)
				}
			}}
			_, c := taskServer(t, tasks)
			a, err := c.CallToolTask(testCtx(t, 20*time.Second), tc.tool, nil, nil)
			if tc.wantErr != "" {
				t.Logf("err: %v", err)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || a.Pending == nil {
				t.Fatalf("answer = %+v, %v; want pending", a, err)
			}
			tc.check(t, a.Pending)
		})
	}
}

func TestTasksNeedTheModernEra(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{Tasks: &mcptest.Tasks{}}) // stateful: legacy era
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client()})
	ctx := testCtx(t, 10*time.Second)
	if _, err := c.GetTask(ctx, "task-1"); !errors.Is(err, ErrNoTasks) {
		t.Errorf("GetTask on a legacy Conn: %v, want ErrNoTasks", err)
	}
	a, err := c.CallToolTask(ctx, mcptest.ToolTaskSleep, nil, nil)
	if err != nil || a.Result == nil {
		t.Fatalf("legacy CallToolTask = %+v, %v; want the synchronous result", a, err)
	}
	if n := count(s.Methods(), "tasks/get"); n != 0 {
		t.Errorf("sent %d tasks/get on a legacy Conn", n)
	}
}
