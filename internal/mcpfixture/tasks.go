package mcpfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TasksExtension is the Tasks extension's identifier (2026-07-28).
const TasksExtension = "io.modelcontextprotocol/tasks"

// The fixture's Tasks-extension tools. A client that declares the
// extension gets a task from each task_* tool; one that does not gets
// task_sleep's result synchronously (the same bytes a completed task
// carries) and a -32021 error from the others. ask_twice answers
// input_required directly, twice, then completes.
const (
	ToolTaskSleep   = "task_sleep"   // completes after Tasks.Polls polls and Tasks.Delay
	ToolTaskFail    = "task_fail"    // ends failed with a JSON-RPC error
	ToolTaskAsk     = "task_ask"     // asks for "name" by elicitation, then completes
	ToolTaskForever = "task_forever" // never leaves working
	ToolAskTwice    = "ask_twice"    // input_required directly, keys q1 then q2
)

// SleepResult is task_sleep's tool result, as a completed task and as a
// synchronous answer carry it.
const SleepResult = `{"content":[{"type":"text","text":"task_sleep: done"}],"isError":false}`

// Tasks is the fixture's Tasks-extension state; put it in Options.Tasks.
// Its fields are read when a task is created or polled; set them before
// serving. It is safe for concurrent use.
type Tasks struct {
	// Polls is how many tasks/get a task_sleep task answers working
	// before it completes; Delay must also have passed since creation.
	Polls int
	Delay time.Duration
	// PollIntervalMs and TTLMs are sent on every task; TTLMs 0 sends null.
	PollIntervalMs int64
	TTLMs          int64
	// Rewrite, when set, may change any result before it is sent (hostile
	// tests): method is the request's, result the decoded result object.
	Rewrite func(method string, result map[string]any)
	// Now, when set, is the tasks' clock (creation, Delay, timestamps);
	// nil is time.Now. A benchmark advances it by the seconds a caller
	// waited instead of waiting them.
	Now func() time.Time

	mu    sync.Mutex
	seq   int
	tasks map[string]*task
}

type task struct {
	tool      string
	created   time.Time
	polls     int
	cancelled bool
	answer    string // task_ask's "name" once tasks/update gave it
}

// rpcRequest is the part of a JSON-RPC request the fixture reads.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string                     `json:"name"`
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
		Meta           struct {
			Caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

func (r *rpcRequest) declared() bool {
	_, ok := r.Params.Meta.Caps.Extensions[TasksExtension]
	return ok
}

// wrap answers what the SDK server cannot (task tools, tasks/*, ask_twice)
// and hands everything else to next.
func (t *Tasks) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req rpcRequest
		if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		result, rpcErr, handled := t.answer(&req)
		if !handled {
			next.ServeHTTP(w, r)
			return
		}
		msg := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			if t.Rewrite != nil {
				t.Rewrite(req.Method, result)
			}
			msg["result"] = result
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
	})
}

func rpcError(code int, format string, args ...any) map[string]any {
	return map[string]any{"code": code, "message": fmt.Sprintf(format, args...)}
}

// answer returns the result or error for req, or handled false.
func (t *Tasks) answer(req *rpcRequest) (result, rpcErr map[string]any, handled bool) {
	switch req.Method {
	case "tools/call":
		switch req.Params.Name {
		case ToolAskTwice:
			return askTwice(req), nil, true
		case ToolTaskSleep, ToolTaskFail, ToolTaskAsk, ToolTaskForever:
		default:
			return nil, nil, false
		}
		if !req.declared() {
			if req.Params.Name == ToolTaskSleep {
				return nil, nil, false // the SDK server answers it synchronously
			}
			return nil, missingCapability(), true
		}
		return t.create(req.Params.Name), nil, true
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !req.declared() {
			return nil, missingCapability(), true
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		tk := t.tasks[req.Params.TaskID]
		if tk == nil {
			return nil, rpcError(-32602, "Failed to retrieve task: Task not found"), true
		}
		switch req.Method {
		case "tasks/get":
			tk.polls++
			return t.detail(req.Params.TaskID, tk), nil, true
		case "tasks/update":
			if raw, ok := req.Params.InputResponses["name"]; ok && tk.tool == ToolTaskAsk {
				var resp struct {
					Content struct {
						Name string `json:"name"`
					} `json:"content"`
				}
				_ = json.Unmarshal(raw, &resp)
				tk.answer = resp.Content.Name
			}
		default:
			tk.cancelled = true
		}
		return map[string]any{"resultType": "complete"}, nil, true
	}
	return nil, nil, false
}

func missingCapability() map[string]any {
	e := rpcError(-32021, "Missing required client capability")
	e["data"] = map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{TasksExtension: map[string]any{}}}}
	return e
}

func (t *Tasks) create(tool string) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks = map[string]*task{}
	}
	t.seq++
	id := "task-" + strconv.Itoa(t.seq)
	tk := &task{tool: tool, created: t.now()}
	t.tasks[id] = tk
	out := t.base(id, tk, "working")
	out["resultType"] = "task"
	return out
}

// detail is tasks/get's answer; t.mu is held.
func (t *Tasks) detail(id string, tk *task) map[string]any {
	done := tk.polls > t.Polls && t.now().Sub(tk.created) >= t.Delay
	switch {
	case tk.cancelled:
		return t.base(id, tk, "cancelled")
	case tk.tool == ToolTaskSleep && done:
		out := t.base(id, tk, "completed")
		out["result"] = json.RawMessage(SleepResult)
		return out
	case tk.tool == ToolTaskFail && done:
		out := t.base(id, tk, "failed")
		out["statusMessage"] = "the fixture failed on purpose"
		out["error"] = rpcError(-32603, "the fixture failed on purpose")
		return out
	case tk.tool == ToolTaskAsk && tk.answer != "":
		out := t.base(id, tk, "completed")
		out["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "Hello, " + tk.answer + "!"}}, "isError": false}
		return out
	case tk.tool == ToolTaskAsk:
		out := t.base(id, tk, "input_required")
		out["inputRequests"] = map[string]any{"name": elicit("Please enter your name.")}
		return out
	}
	return t.base(id, tk, "working")
}

func (t *Tasks) base(id string, tk *task, status string) map[string]any {
	var ttl any // null: unlimited
	if t.TTLMs > 0 {
		ttl = t.TTLMs
	}
	return map[string]any{
		"resultType":     "complete",
		"taskId":         id,
		"status":         status,
		"createdAt":      tk.created.UTC().Format(time.RFC3339),
		"lastUpdatedAt":  t.now().UTC().Format(time.RFC3339),
		"ttlMs":          ttl,
		"pollIntervalMs": t.PollIntervalMs,
	}
}

func (t *Tasks) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

func elicit(message string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message,
		"requestedSchema": map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
	}}
}

// askTwice answers ask_twice: round one asks q1 (requestState "r1"), round
// two, given q1 and "r1", asks q2 ("r2"); given q2 and "r2" it completes
// with both answers. Anything else starts over at round one.
func askTwice(req *rpcRequest) map[string]any {
	p := req.Params
	round := func(key, state string) map[string]any {
		return map[string]any{"resultType": "input_required", "requestState": state,
			"inputRequests": map[string]any{key: elicit("Answer " + key + ".")}}
	}
	name := func(key string) string {
		var resp struct {
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		_ = json.Unmarshal(p.InputResponses[key], &resp)
		return resp.Content.Name
	}
	switch {
	case p.RequestState == "r1" && p.InputResponses["q1"] != nil:
		r := round("q2", "r2|"+name("q1"))
		return r
	case len(p.RequestState) > 3 && p.RequestState[:3] == "r2|" && p.InputResponses["q2"] != nil:
		return map[string]any{"resultType": "complete", "isError": false, "content": []any{
			map[string]any{"type": "text", "text": "answers: " + p.RequestState[3:] + ", " + name("q2")}}}
	}
	return round("q1", "r1")
}

// addTaskTools lists the Tasks-extension tools. Only task_sleep's handler
// runs (for a client that does not declare the extension); Tasks.wrap
// answers every other call to them.
func addTaskTools(s *mcp.Server, c *Counters) {
	noArgs := schema(`{"type":"object"}`)
	for _, name := range []string{ToolTaskSleep, ToolTaskFail, ToolTaskAsk, ToolTaskForever, ToolAskTwice} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: noArgs}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c.ran(name)
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(SleepResult), &res); err != nil {
				return nil, err
			}
			return &res, nil
		})
	}
}
