package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// release gives the key's lease back, logging a failure.
func (h *Handler) release(ctx context.Context, it *runner.Item, key string) {
	if rerr := h.Ledger.Release(ctx, key); rerr != nil {
		h.logger().Warn("ledger release failed", "request_id", it.RequestID, "work_item", it.ID, "error", it.Scrub(rerr.Error()))
	}
}

// finish records the call's outcome under key (or releases the key when
// the call never reached the server) and returns it.
func (h *Handler) finish(ctx context.Context, it *runner.Item, key string, res *render.ToolResult, ran bool, err error) (any, error) {
	if !ran {
		h.release(ctx, it, key)
		return nil, err
	}
	outcome := ledger.Outcome{ErrorType: string(wire.TypeOf(err))}
	if err != nil {
		outcome.Message = it.PublicMessage(err)
	} else if outcome.Result, err = json.Marshal(res); err != nil {
		err = wire.Errorf(wire.Internal, err, "internal error: the result does not marshal")
		outcome = ledger.Outcome{ErrorType: string(wire.Internal), Message: "internal error: the result does not marshal"}
	}
	cerr := h.Ledger.Complete(ctx, key, outcome)
	if errors.Is(cerr, ledger.ErrTooLarge) && res != nil {
		cerr = h.Ledger.Complete(ctx, key, ledger.Outcome{Result: tooLargeToReplay(res, len(outcome.Result))})
	}
	if cerr != nil {
		h.logger().Warn("ledger complete failed", "request_id", it.RequestID, "work_item", it.ID, "error", it.Scrub(cerr.Error()))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// replay turns a stored outcome back into a result or a final error; note
// (idempotentNote) follows the error's message.
func replay(o ledger.Outcome, note string) (any, error) {
	if o.ErrorType != "" {
		return nil, &wire.Error{Type: wire.ErrorType(o.ErrorType), Message: o.Message + " (outcome of an earlier delivery" + note + ")", Final: true}
	}
	return o.Result, nil
}

// tooLargeToReplay is the outcome stored for a result the ledger cannot
// hold: a duplicate delivery gets a note instead of the result.
func tooLargeToReplay(res *render.ToolResult, size int) json.RawMessage {
	note := render.ToolResult{
		Type:      render.TypeToolResult,
		ToolUseID: res.ToolUseID,
		IsError:   res.IsError,
		Content: []render.Block{{Type: render.TypeText, Text: fmt.Sprintf(
			"[this tool call already ran and its result was delivered; at %d bytes it is too large to deliver again]", size)}},
	}
	b, _ := json.Marshal(note) // a ToolResult of strings always marshals
	return b
}
