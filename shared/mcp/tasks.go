package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mcpfn/mcpfn/shared/text"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what a pending answer may carry. An answer past one of them
// is refused (ErrServerAnswered); a poll interval or TTL past its bound is
// clamped instead.
const (
	MaxInputRequestsBytes = 64 << 10
	MaxRequestStateBytes  = 256 << 10
	MaxTaskIDBytes        = 256
	MaxPollInterval       = 900 * time.Second
	MaxStatusMessageBytes = 1024
	maxTTL                = 10 * 365 * 24 * time.Hour
)

// Pending statuses.
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
)

// Task errors. Each wraps ErrServerAnswered. ErrTaskNotFound: the server
// no longer knows the task (-32602 on a tasks/* request). ErrTaskFailed:
// the task ended failed, with the JSON-RPC error it carried.
// ErrTaskCancelled: the task ended cancelled. ErrNoTasks: the Conn
// negotiated a version before 2026-07-28, which has no tasks; nothing was
// sent. ErrUndeclaredTask (CallTool, which declares no Tasks extension):
// the server answered with a task anyway; it wraps ErrProtocol, not
// ErrServerAnswered, since the tool may be running.
var (
	ErrUndeclaredTask = fmt.Errorf("%w: a task answer to a tools/call that declared no Tasks extension", ErrProtocol)
	ErrTaskNotFound   = fmt.Errorf("%w: task not found", ErrServerAnswered)
	ErrTaskFailed     = fmt.Errorf("%w: task failed", ErrServerAnswered)
	ErrTaskCancelled  = fmt.Errorf("%w: task cancelled", ErrServerAnswered)
	ErrNoTasks        = errors.New("mcp: the negotiated protocol version has no tasks")
)

// Pending is an answer that is not the tool's output yet: a task
// (TaskID set) or a direct input_required answer (TaskID empty,
// RequestState set). Status is StatusWorking or StatusInputRequired.
// PollInterval is the server's pollIntervalMs clamped to
// [0, MaxPollInterval]; the caller applies its own floor. TTL is zero when
// the server gave none. InputRequests is the server's object as sent
// (compact JSON, at most MaxInputRequestsBytes), only for input_required.
type Pending struct {
	TaskID        string
	Status        string
	PollInterval  time.Duration
	TTL           time.Duration
	CreatedAt     time.Time
	StatusMessage string
	InputRequests json.RawMessage
	RequestState  string
}

// ExpiresAt is CreatedAt plus TTL, or the zero time when either is unknown.
func (p *Pending) ExpiresAt() time.Time {
	if p.TTL <= 0 || p.CreatedAt.IsZero() {
		return time.Time{}
	}
	return p.CreatedAt.Add(p.TTL)
}

// Answer is a task-aware call's answer: exactly one of Result and Pending.
type Answer struct {
	Result  *CallResult
	Pending *Pending
}

// Resume continues a direct input_required answer: the responses keyed
// like its InputRequests, and its RequestState unchanged.
type Resume struct {
	InputResponses json.RawMessage
	RequestState   string
}

// CallToolTask is CallTool for a caller that can wait: on a Conn at
// 2026-07-28 or later the tools/call declares the Tasks extension, and the
// server may answer with a task or input_required (Pending). resume, when
// set, carries inputResponses and requestState. On an older Conn it is
// CallTool (resume must be nil). It sends exactly one tools/call; errors
// are CallTool's.
func (c *Conn) CallToolTask(ctx context.Context, name string, arguments json.RawMessage, resume *Resume) (*Answer, error) {
	if c == nil || c.cs == nil {
		return nil, fmt.Errorf("mcp: call %q: %w: the Conn did not come from Connect", text.Truncate(name, 128), ErrNotConnected)
	}
	what := fmt.Sprintf("call %q", text.Truncate(name, 128))
	if !c.modern() {
		if resume != nil {
			return nil, fmt.Errorf("mcp: %s: %w: input responses need 2026-07-28", what, ErrNoTasks)
		}
		res, err := c.CallTool(ctx, name, arguments)
		if err != nil {
			return nil, err
		}
		return &Answer{Result: res}, nil
	}
	args := json.RawMessage(`{}`)
	if trimmed := bytes.TrimSpace(arguments); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || !json.Valid(trimmed) {
			return nil, fmt.Errorf("mcp: %s: %w", what, errNotObject)
		}
		args = trimmed
	}
	params := map[string]any{"name": name, "arguments": args}
	if resume != nil {
		params["inputResponses"] = resume.InputResponses
		params["requestState"] = resume.RequestState
	}
	ctx, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	raw, err := c.rpc(ctx, what, "tools/call", name, params)
	if errors.Is(err, errUnprimed) {
		return c.CallToolTask(ctx, name, arguments, resume) // once: the Conn is unprimed now
	}
	if err != nil {
		return nil, err
	}
	w, err := decodeTask(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, err)
	}
	switch w.ResultType {
	case "", "complete":
		res, err := toolResult(what, raw)
		if err != nil {
			return nil, err
		}
		return &Answer{Result: res}, nil
	case "task":
		return c.taskAnswer(what, "", w)
	case "input_required":
		p, err := w.pending(StatusInputRequired)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, err)
		}
		if len(p.InputRequests) == 0 || string(p.InputRequests) == "{}" {
			return nil, fmt.Errorf("mcp: %s: %w: input_required without input requests", what, ErrServerAnswered)
		}
		if len(w.RequestState) > MaxRequestStateBytes {
			return nil, fmt.Errorf("mcp: %s: %w: requestState is %d bytes, over %d", what, ErrServerAnswered, len(w.RequestState), MaxRequestStateBytes)
		}
		p.RequestState = w.RequestState
		return &Answer{Pending: p}, nil
	}
	return nil, fmt.Errorf("mcp: %s: %w: unknown resultType %q", what, ErrServerAnswered, text.Truncate(w.ResultType, 64))
}

// GetTask sends one tasks/get. A working or input_required task is
// Pending; a completed one is its tool result, converted as CallTool
// converts a synchronous answer. Errors wrap ErrTaskFailed,
// ErrTaskCancelled, ErrTaskNotFound, ErrNoTasks or CallTool's.
func (c *Conn) GetTask(ctx context.Context, taskID string) (*Answer, error) {
	what := "tasks/get"
	raw, err := c.taskRequest(ctx, what, taskID, nil)
	if err != nil {
		return nil, err
	}
	w, err := decodeTask(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, err)
	}
	return c.taskAnswer(what, taskID, w)
}

// UpdateTask sends one tasks/update with responses (a JSON object keyed
// like the task's inputRequests). Errors as GetTask's.
func (c *Conn) UpdateTask(ctx context.Context, taskID string, responses json.RawMessage) error {
	if !json.Valid(responses) || bytes.TrimSpace(responses)[0] != '{' {
		return fmt.Errorf("mcp: tasks/update: input responses are not a JSON object")
	}
	_, err := c.taskRequest(ctx, "tasks/update", taskID, map[string]any{"inputResponses": json.RawMessage(responses)})
	return err
}

// CancelTask sends one tasks/cancel. The server's acknowledgement does not
// mean the task stopped. Errors as GetTask's.
func (c *Conn) CancelTask(ctx context.Context, taskID string) error {
	_, err := c.taskRequest(ctx, "tasks/cancel", taskID, nil)
	return err
}

// taskRequest sends one tasks/* request within DialTimeout.
func (c *Conn) taskRequest(ctx context.Context, method, taskID string, params map[string]any) (json.RawMessage, error) {
	if c == nil || c.cs == nil {
		return nil, fmt.Errorf("mcp: %s: %w", method, ErrNotConnected)
	}
	if !c.modern() {
		return nil, fmt.Errorf("mcp: %s: %w", method, ErrNoTasks)
	}
	if !validTaskID(taskID) {
		return nil, fmt.Errorf("mcp: %s: the task id is not 1-%d printable ASCII bytes", method, MaxTaskIDBytes)
	}
	if params == nil {
		params = map[string]any{}
	}
	params["taskId"] = taskID
	ctx, cancel := context.WithTimeout(ctx, connectBudget)
	defer cancel()
	raw, err := c.rpc(ctx, method, method, taskID, params)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == -32602 {
		return nil, fmt.Errorf("mcp: %s: %w: %w", method, ErrTaskNotFound, rpcErr)
	}
	return raw, err
}

// taskAnswer turns a task (created, or polled for id) into an Answer.
func (c *Conn) taskAnswer(what, id string, w *taskWire) (*Answer, error) {
	if !validTaskID(w.TaskID) {
		return nil, fmt.Errorf("mcp: %s: %w: the task id is not 1-%d printable ASCII bytes", what, ErrServerAnswered, MaxTaskIDBytes)
	}
	if id != "" && w.TaskID != id {
		return nil, fmt.Errorf("mcp: %s: %w: answered for another task", what, ErrServerAnswered)
	}
	switch w.Status {
	case StatusWorking, StatusInputRequired:
		p, err := w.pending(w.Status)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrServerAnswered, err)
		}
		p.TaskID = w.TaskID
		return &Answer{Pending: p}, nil
	case "completed":
		if len(w.Result) == 0 || w.Result[0] != '{' {
			return nil, fmt.Errorf("mcp: %s: %w: a completed task carries no result object", what, ErrServerAnswered)
		}
		res, err := toolResult(what, w.Result)
		if err != nil {
			return nil, err
		}
		return &Answer{Result: res}, nil
	case "failed":
		var e RPCError
		_ = json.Unmarshal(w.Error, &e)
		return nil, fmt.Errorf("mcp: %s: %w: %w", what, ErrTaskFailed, &e)
	case "cancelled":
		return nil, fmt.Errorf("mcp: %s: %w", what, ErrTaskCancelled)
	}
	return nil, fmt.Errorf("mcp: %s: %w: unknown task status %q", what, ErrServerAnswered, text.Truncate(w.Status, 64))
}

// toolResult decodes a tools/call result object as the SDK would, then
// converts it as CallTool does, so both paths render the same bytes.
func toolResult(what string, raw json.RawMessage) (*CallResult, error) {
	var res sdk.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcp: %s: %w: the tool result does not decode: %w", what, ErrServerAnswered, err)
	}
	return convert(what, &res)
}

// taskWire is a Task, a CreateTaskResult, an InputRequiredResult or a
// CallToolResult: everything this package reads of them.
type taskWire struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	TTLMs          *float64        `json:"ttlMs"`
	PollIntervalMs *float64        `json:"pollIntervalMs"`
	InputRequests  json.RawMessage `json:"inputRequests"`
	RequestState   string          `json:"requestState"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
}

func decodeTask(raw json.RawMessage) (*taskWire, error) {
	var w taskWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("the result does not decode: %w", err)
	}
	return &w, nil
}

// pending builds the bounded Pending of w with status.
func (w *taskWire) pending(status string) (*Pending, error) {
	p := &Pending{
		Status:        status,
		StatusMessage: truncateServerText(w.StatusMessage),
		PollInterval:  millis(w.PollIntervalMs, MaxPollInterval),
		TTL:           millis(w.TTLMs, maxTTL),
	}
	if t, err := time.Parse(time.RFC3339Nano, w.CreatedAt); err == nil {
		p.CreatedAt = t
	}
	if status != StatusInputRequired {
		return p, nil
	}
	if len(w.InputRequests) > MaxInputRequestsBytes {
		return nil, fmt.Errorf("inputRequests is %d bytes, over %d", len(w.InputRequests), MaxInputRequestsBytes)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, w.InputRequests); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, errors.New("inputRequests is not a JSON object")
	}
	p.InputRequests = buf.Bytes()
	return p, nil
}

// millis converts a server's millisecond count to a duration in [0, limit].
func millis(ms *float64, limit time.Duration) time.Duration {
	if ms == nil || math.IsNaN(*ms) || *ms <= 0 {
		return 0
	}
	if *ms >= float64(limit/time.Millisecond) {
		return limit
	}
	return time.Duration(*ms) * time.Millisecond
}

// validTaskID reports 1-MaxTaskIDBytes of printable ASCII, which is what
// may go in the Mcp-Name header and a ledger record.
func validTaskID(id string) bool {
	if id == "" || len(id) > MaxTaskIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// truncateServerText cuts a server's prose to MaxStatusMessageBytes.
func truncateServerText(s string) string { return text.Truncate(s, MaxStatusMessageBytes) }
