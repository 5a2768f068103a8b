package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/startup"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// TaskConn is the part of an MCP connection a call that may outlive one
// invocation uses (2026-07-28 tasks and input requests).
type TaskConn interface {
	CallToolTask(ctx context.Context, name string, arguments json.RawMessage, resume *mcp.Resume) (*mcp.Answer, error)
	GetTask(ctx context.Context, taskID string) (*mcp.Answer, error)
	UpdateTask(ctx context.Context, taskID string, responses json.RawMessage) error
	CancelTask(ctx context.Context, taskID string) error
}

// Suspender keeps a call's pending state on its ledger record.
type Suspender interface {
	Suspend(ctx context.Context, key string, p ledger.Pending) error
}

var (
	_ TaskConn  = (*mcp.Conn)(nil)
	_ Suspender = (*ledger.Dynamo)(nil)
	_ Suspender = (*ledger.Memory)(nil)
)

// TypePending is the type of a pending answer.
const TypePending = "mcp_call_pending"

// MaxInputRounds bounds the input rounds of one call; the next is a
// recorded is_error result.
const MaxInputRounds = 10

// maxPollAfter is the longest poll_after_seconds, and SQS's longest delay.
const maxPollAfter = 900

// PendingAnswer is a call's answer while the server has not finished it
// (docs/contract.md). InputRequests only for input_required; ExpiresAt
// only when the server gave a TTL; Tool, Hints and ArgumentsSHA256 only
// for approval_required.
type PendingAnswer struct {
	Type             string           `json:"type"`
	Status           string           `json:"status"`
	PollAfterSeconds int              `json:"poll_after_seconds"`
	ExpiresAt        string           `json:"expires_at,omitempty"`
	StatusMessage    string           `json:"status_message,omitempty"`
	InputRequests    json.RawMessage  `json:"input_requests,omitempty"`
	Tool             string           `json:"tool,omitempty"`             // approval_required: the server's tool name
	Hints            *mcp.Annotations `json:"hints,omitempty"`            // approval_required: the tool's annotation hints
	ArgumentsSHA256  string           `json:"arguments_sha256,omitempty"` // approval_required: what an approval must name
}

// step is one request a call sends on an open connection.
type step func(ctx context.Context, conn Conn) (*mcp.Answer, error)

// start is a new call's step: task-aware when it can be continued (a
// continuable caller with a key, a ledger that suspends, a connection
// that speaks tasks), else CallTool.
func (h *Handler) start(req Request, p primer, continuable bool) step {
	_, suspends := h.Ledger.(Suspender)
	return func(ctx context.Context, conn Conn) (*mcp.Answer, error) {
		if tc, ok := conn.(TaskConn); ok && continuable && suspends {
			return tc.CallToolTask(ctx, p.toolName, req.arguments(), nil)
		}
		res, err := conn.CallTool(ctx, p.toolName, req.arguments())
		return &mcp.Answer{Result: res}, err
	}
}

// taskStep runs f on a connection that speaks tasks.
func taskStep(f func(ctx context.Context, tc TaskConn) (*mcp.Answer, error)) step {
	return func(ctx context.Context, conn Conn) (*mcp.Answer, error) {
		tc, ok := conn.(TaskConn)
		if !ok {
			return nil, fmt.Errorf("%w: the connection cannot continue a pending call", mcp.ErrNoTasks)
		}
		return f(ctx, tc)
	}
}

// continueCall takes one step on the pending call lp under key, whose
// lease the caller holds: a poll, an update with input responses, one
// more tools/call round, or a cancel.
func (h *Handler) continueCall(ctx context.Context, it *runner.Item, req Request, p primer, key string, lp *ledger.Pending) (any, error) {
	if p.toolName != lp.Tool || argsDigest(req.arguments()) != lp.ArgsDigest {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.InvalidRequest, nil, "this idempotency key continues a pending call of another tool or other arguments")
	}
	waiting := len(lp.OpenInputs) > 0
	var s step
	switch {
	case req.Cancel && lp.TaskID == "":
		return h.finish(ctx, it, key, errorResult(req.ToolUseID, "The tool call was cancelled at the caller's request before it finished."), true, nil)
	case req.Cancel:
		s = taskStep(func(ctx context.Context, tc TaskConn) (*mcp.Answer, error) {
			if err := tc.CancelTask(ctx, lp.TaskID); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: the call was cancelled at the caller's request", mcp.ErrTaskCancelled)
		})
	case req.InputResponses != nil && !waiting:
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.InvalidRequest, nil, "input_responses for a call that is not waiting for input")
	case req.InputResponses != nil && !answersOpen(req.InputResponses, lp.OpenInputs):
		h.release(ctx, it, key) // this round was answered already: the same answer again
		return pendingReply{body: lp.Answer, since: lp.Since}, nil
	case req.InputResponses != nil && lp.Rounds >= MaxInputRounds:
		return h.finish(ctx, it, key, errorResult(req.ToolUseID, fmt.Sprintf("The MCP server asked for input more than %d times; the call was stopped.", MaxInputRounds)), true, nil)
	case req.InputResponses != nil && lp.TaskID != "":
		s = taskStep(func(ctx context.Context, tc TaskConn) (*mcp.Answer, error) {
			if err := tc.UpdateTask(ctx, lp.TaskID, req.InputResponses); err != nil {
				return nil, err
			}
			return tc.GetTask(ctx, lp.TaskID)
		})
	case req.InputResponses != nil:
		s = taskStep(func(ctx context.Context, tc TaskConn) (*mcp.Answer, error) {
			return tc.CallToolTask(ctx, p.toolName, req.arguments(), &mcp.Resume{InputResponses: req.InputResponses, RequestState: lp.RequestState})
		})
	case lp.TaskID == "":
		h.release(ctx, it, key) // waiting for input nobody gave: the same answer again
		return pendingReply{body: lp.Answer, since: lp.Since}, nil
	case !lp.ExpiresAt.IsZero() && h.now().After(lp.ExpiresAt):
		return h.finish(ctx, it, key, errorResult(req.ToolUseID, "The MCP server's task expired (its TTL passed) before it finished."), true, nil)
	default:
		s = taskStep(func(ctx context.Context, tc TaskConn) (*mcp.Answer, error) { return tc.GetTask(ctx, lp.TaskID) })
	}
	out, err := h.call(ctx, it, req, p, s)
	if out.pending != nil {
		next := h.newPending(req, p, out)
		next.Rounds, next.Since = lp.Rounds, lp.Since
		if req.InputResponses != nil {
			next.Rounds++
		}
		if next.TaskID == "" {
			next.TaskID = lp.TaskID
		}
		return h.suspend(ctx, it, key, next, out)
	}
	return h.finish(ctx, it, key, out.res, out.ran, err)
}

// newPending is the ledger's pending state for out.
func (h *Handler) newPending(req Request, p primer, out callOutcome) ledger.Pending {
	mp := out.pending
	lp := ledger.Pending{
		Tool:         p.toolName,
		ArgsDigest:   argsDigest(req.arguments()),
		TaskID:       mp.TaskID,
		Version:      out.version,
		PollAfter:    h.pollAfter(mp.PollInterval),
		ExpiresAt:    mp.ExpiresAt(),
		RequestState: mp.RequestState,
		Since:        h.now().UTC(),
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(mp.InputRequests, &keys) == nil {
		for k := range keys {
			lp.OpenInputs = append(lp.OpenInputs, k)
		}
		slices.Sort(lp.OpenInputs)
	}
	return lp
}

// suspend stores lp under key with the pending answer it renders, and
// returns that answer.
func (h *Handler) suspend(ctx context.Context, it *runner.Item, key string, lp ledger.Pending, out callOutcome) (any, error) {
	answer := h.pendingAnswer(it, out.pending, lp.PollAfter)
	body, err := json.Marshal(answer)
	if err != nil {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.Internal, err, "internal error: the pending answer does not marshal")
	}
	lp.Answer = body
	it.Annotate(slog.String("pending", answer.Status), slog.Int("poll_after_seconds", answer.PollAfterSeconds))
	s, ok := h.Ledger.(Suspender)
	if !ok {
		err = errors.New("the ledger keeps no pending state")
	} else {
		err = s.Suspend(ctx, key, lp)
	}
	if err != nil {
		// The lease runs out and the key is taken over without this state.
		h.logger().Warn("ledger suspend failed", "request_id", it.RequestID, "work_item", it.ID, "error", it.Scrub(err.Error()))
	}
	return pendingReply{body: body, since: lp.Since}, nil
}

// pendingAnswer renders p, scrubbed of the call's secrets.
func (h *Handler) pendingAnswer(it *runner.Item, p *mcp.Pending, pollAfter int) PendingAnswer {
	a := PendingAnswer{Type: TypePending, Status: p.Status, PollAfterSeconds: pollAfter, StatusMessage: it.ScrubSecrets(p.StatusMessage)}
	if at := p.ExpiresAt(); !at.IsZero() {
		a.ExpiresAt = at.UTC().Format(time.RFC3339)
	}
	if p.Status == mcp.StatusInputRequired {
		scrubbed := []byte(it.ScrubSecrets(string(p.InputRequests)))
		if !json.Valid(scrubbed) {
			scrubbed = []byte(`{}`)
		}
		a.InputRequests = scrubbed
	}
	return a
}

// runningElsewhere answers a direct duplicate that found another
// delivery's lease (err, a ledger.InProgressError when the ledger knows the
// lease's end): pending working, to poll again when the lease runs out, so
// a state machine waits instead of spending its retries on internal_error.
// Nothing is recorded: the key is the other delivery's.
func (h *Handler) runningElsewhere(it *runner.Item, err error) PendingAnswer {
	var left time.Duration
	if busy, ok := errors.AsType[*ledger.InProgressError](err); ok {
		left = busy.Until.Sub(h.now())
	}
	a := PendingAnswer{Type: TypePending, Status: mcp.StatusWorking, PollAfterSeconds: h.pollAfter(left),
		StatusMessage: "another delivery of this call is still running"}
	it.Annotate(slog.String("pending", a.Status), slog.Int("poll_after_seconds", a.PollAfterSeconds), slog.Bool("in_progress_elsewhere", true))
	return a
}

// pollAfter is the server's poll interval in whole seconds, at least
// TaskPollMin and at most 900.
func (h *Handler) pollAfter(d time.Duration) int {
	floor := h.TaskPollMin
	if floor <= 0 {
		floor = startup.DefaultTaskPollMin
	}
	secs := int(math.Ceil(max(d, floor).Seconds()))
	return min(secs, maxPollAfter)
}

// argsDigest identifies a call's arguments: the SHA-256 of their compact
// JSON ({} when absent).
func argsDigest(args json.RawMessage) string {
	var buf bytes.Buffer
	if len(args) == 0 || json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.WriteString("{}")
	}
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// answersOpen reports whether responses answer at least one open input key.
func answersOpen(responses json.RawMessage, open []string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(responses, &m) != nil {
		return false
	}
	for k := range m {
		if slices.Contains(open, k) {
			return true
		}
	}
	return false
}

// errorResult is a recorded is_error tool_result saying msg.
func errorResult(toolUseID, msg string) *render.ToolResult {
	return &render.ToolResult{Type: render.TypeToolResult, ToolUseID: toolUseID, IsError: true,
		Content: []render.Block{{Type: render.TypeText, Text: msg}}}
}
