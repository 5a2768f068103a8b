package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schema"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// JudgedStore is a Store that records which schema rules judged its
// current version (catalog.Discovery.SchemaRules, catalog.Dynamo). With
// one, a tool defined as in that version, under schema.RulesVersion, is
// not checked again, on any instance; with a store that is not one, every
// schema without a cached verdict is checked.
type JudgedStore interface {
	Judged(ctx context.Context, id, rules string) (catalog.Judged, error)
}

var _ JudgedStore = (*catalog.Dynamo)(nil)

// judgedReadTimeout bounds the read of the stored verdicts: it only saves
// CPU, so a store slower than this leaves the schemas to check.
const judgedReadTimeout = 5 * time.Second

// checkInCPUSlot moves the tools whose schemas a model request could not
// carry to the refusals (checkSchemas), skipping tools defined as in the
// stored version judged under schema.RulesVersion. It runs in one of the
// function's CPU slots (runner.Item.CPU), counting as work the bytes of
// schemas still to check; a listing with none takes no slot. When the
// slots are busy for longer than the item could wait, the item comes back
// requeued, and is not recorded as the catalog's failure.
func (h *Handler) checkInCPUSlot(ctx context.Context, it *runner.Item, id string, l mcp.Listing) (mcp.Listing, error) {
	cache := h.schemas()
	unknown := func(t mcp.Tool) (n int64) {
		for _, s := range [][]byte{t.InputSchema, t.OutputSchema} {
			if len(s) > 0 && !cache.Known(s) {
				n += int64(len(s))
			}
		}
		return n
	}
	skip := make([]bool, len(l.Tools))
	todo := make([]int64, len(l.Tools)) // bytes of each tool's schemas with no cached verdict
	var work int64
	for i, t := range l.Tools {
		todo[i] = unknown(t)
		work += todo[i]
	}
	if js, ok := h.Store.(JudgedStore); ok && work > 0 {
		j := h.readJudged(ctx, it, js, id)
		for i, t := range l.Tools {
			if todo[i] > 0 && j.Unchanged(t) {
				skip[i] = true
				work -= todo[i]
			}
		}
	}
	if work > 0 {
		release, err := it.CPU(ctx, work)
		if err != nil {
			return mcp.Listing{}, err
		}
		defer release()
	}
	l, err := checkListed(ctx, cache, l, skip)
	if err != nil {
		return mcp.Listing{}, wire.Errorf(wire.ProtocolError, err, "could not check the MCP server's tool schemas within the operation timeout")
	}
	return l, nil
}

// readJudged asks js for id's stored verdicts; a failure is logged and
// leaves every schema to check.
func (h *Handler) readJudged(ctx context.Context, it *runner.Item, js JudgedStore, id string) catalog.Judged {
	rctx, cancel := context.WithTimeout(ctx, judgedReadTimeout)
	defer cancel()
	v, err := js.Judged(rctx, id, schema.RulesVersion)
	if err != nil {
		h.logger().Warn("reading the stored schema verdicts failed; checking every schema", "request_id", it.RequestID, "work_item", it.ID, "catalog_id", id, "error", it.Scrub(err.Error()))
		return catalog.Judged{}
	}
	return v
}

// checkSchemas moves each tool whose input or output schema a model
// request could not carry (schema.Check) to the refusals, with the rule.
// Verdicts come from cache: a schema judged before on this instance, by
// this listing, another server's or an earlier discovery, is not checked
// again. It stops with ctx's error when ctx ends first: a listing of
// schemas built to be slow to check must not eat the reserve meant for
// the store.
func checkSchemas(ctx context.Context, cache *schema.Cache, l mcp.Listing) (mcp.Listing, error) {
	return checkListed(ctx, cache, l, nil)
}

// checkListed is checkSchemas keeping without a check each tool i with
// skip[i] (skip may be nil or shorter than the listing).
func checkListed(ctx context.Context, cache *schema.Cache, l mcp.Listing, skip []bool) (mcp.Listing, error) {
	kept := l.Tools[:0:0]
	for i, t := range l.Tools {
		if err := ctx.Err(); err != nil {
			return mcp.Listing{}, err
		}
		if i < len(skip) && skip[i] {
			kept = append(kept, t)
			continue
		}
		err := cache.Check(t.InputSchema)
		if err == nil && len(t.OutputSchema) > 0 {
			if err = cache.Check(t.OutputSchema); err != nil {
				err = fmt.Errorf("output_schema: %w", err)
			}
		} else if err != nil {
			err = fmt.Errorf("input_schema: %w", err)
		}
		if err != nil {
			l.Refused = append(l.Refused, mcp.Refusal{Name: t.Name, Reason: err.Error()})
			continue
		}
		kept = append(kept, t)
	}
	l.Tools = kept
	return l, nil
}
