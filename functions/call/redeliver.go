package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Redeliverer sends a call request back to the SQS queue it came from
// (queueARN, the record's eventSourceARN), to be delivered after delay
// (at most 900 seconds).
type Redeliverer interface {
	Redeliver(ctx context.Context, queueARN string, body []byte, delay time.Duration) error
}

var _ Redeliverer = (*runner.QueueSender)(nil)

// MaxSQSWait bounds how long a pending call from SQS without a task token
// keeps going by itself, from when it first went pending (the call state
// machine's MaxCallWaitSeconds default); past it, the record is
// dead-lettered instead of sent back.
const MaxSQSWait = 24 * time.Hour

// pendingReply is a pending answer as it is returned: its JSON, and when
// the call first went pending (zero: unknown). It marks the answer for
// keepGoing; it marshals as the bytes it holds.
type pendingReply struct {
	body  json.RawMessage
	since time.Time
}

// MarshalJSON returns the answer's JSON.
func (p pendingReply) MarshalJSON() ([]byte, error) { return p.body.MarshalJSON() }

// loops reports whether a pending call of it keeps going by itself: an
// SQS record without a task token, from a standard queue (FIFO queues
// take no per-message delay), with a Redeliverer configured.
func (h *Handler) loops(it *runner.Item) bool {
	return it.Source == runner.SQS && it.TaskToken == "" && h.Redeliver != nil &&
		it.Queue != "" && !strings.HasSuffix(it.Queue, ".fifo")
}

// keepGoing turns a pending answer of an SQS record without a task token
// (loops) into what the record needs: working sends the same request
// back to its queue, delayed by poll_after_seconds, and the record is
// done; input_required, which nobody on the queue can answer, is a final
// mcp_protocol_error dead-lettered with the input requests in the message
// attribute mcpfn.input_requests; so is a call still working MaxSQSWait
// after it first went pending. The request sent on carries the call's
// idempotency key (the first message's id when it had none), and neither
// input_responses nor cancel. Any other outcome passes through.
func (h *Handler) keepGoing(ctx context.Context, it *runner.Item, key, kind string, v any, err error) (any, error) {
	reply, ok := v.(pendingReply)
	if err != nil || !ok {
		return v, err
	}
	var a PendingAnswer
	if uerr := json.Unmarshal(reply.body, &a); uerr != nil {
		return nil, wire.Errorf(wire.Internal, uerr, "internal error: the pending answer does not decode")
	}
	body, berr := continuation(it.Body, key, kind)
	if berr != nil {
		return nil, wire.Errorf(wire.Internal, berr, "internal error: the request does not re-encode")
	}
	if a.Status != "working" {
		return nil, &runner.DeadLetterError{
			Err: &wire.Error{Type: wire.ProtocolError, Final: true, Message: "the MCP server asks for input (input_required), which an SQS message without a task token cannot answer; " +
				"the call stays pending under its idempotency key: send this request with input_responses to continue it"},
			Attributes: map[string]string{"input_requests": string(a.InputRequests)},
			Body:       string(body),
		}
	}
	if !reply.since.IsZero() && h.now().Sub(reply.since) >= MaxSQSWait {
		return nil, &runner.DeadLetterError{
			Err: &wire.Error{Type: wire.ProtocolError, Final: true, Message: fmt.Sprintf("the MCP server's task is still working %s after the call went pending; "+
				"the call stays pending under its idempotency key: send this request to poll it again, or with \"cancel\": true to end it", MaxSQSWait)},
			Attributes: map[string]string{"pending_since": reply.since.UTC().Format(time.RFC3339)},
			Body:       string(body),
		}
	}
	delay := time.Duration(a.PollAfterSeconds) * time.Second
	if serr := h.Redeliver.Redeliver(ctx, it.Queue, body, delay); serr != nil {
		// The record comes back after its visibility timeout and polls then.
		return nil, &wire.Error{Type: wire.Internal, Message: "could not send the pending call back to its queue; retry later", Err: serr, Requeue: true}
	}
	it.Annotate(slog.Int("redelivered_after_seconds", a.PollAfterSeconds))
	return v, nil
}

// continuation is raw, the request as received, made the request that
// continues its call: input_responses and cancel removed, and
// idempotency_key set to key when the key was the message id.
func continuation(raw []byte, key, kind string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "input_responses")
	delete(m, "cancel")
	if kind == keyMessageID {
		k, _ := json.Marshal(key) // a string always marshals
		m["idempotency_key"] = k
	}
	return json.Marshal(m)
}
