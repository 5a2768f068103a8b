package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/startup"
)

// staleReason says why a call found its catalog stale; it prints as the
// word the summary line carries as rediscovery_reason.
type staleReason string

const (
	staleNotInCatalog    staleReason = "not_in_catalog"   // the tool is not in the catalog
	staleUnknownTool     staleReason = "unknown_tool"     // the server does not know a catalogued tool
	staleProtocolVersion staleReason = "protocol_changed" // the server negotiated another protocol version
)

// staleness is why a call's outcome shows its catalog stale, or "": the
// server answered the call with JSON-RPC -32602 (invalid params, the
// code MCP servers, go-sdk's included, give an unknown tool), or it
// negotiated a protocol version other than the catalog's.
func staleness(callErr error, recorded, negotiated string) staleReason {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(callErr, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams:
		return staleUnknownTool
	case recorded != "" && negotiated != "" && recorded != negotiated:
		return staleProtocolVersion
	}
	return ""
}

// Re-discovery outcomes on the summary line (rediscovery).
const (
	rediscoveryRequested    = "requested"    // a discover request is on the queue
	rediscoveryDeduplicated = "deduplicated" // another call requested one within the minute
	rediscoverySkipped      = "skipped"      // no discover queue or no schedule configured
	rediscoveryFailed       = "failed"       // the store or the queue failed; logged
)

// rediscover requests one re-discovery of the call's catalog, for reason:
// deduplicated through Stale, sent through Rediscoveries with the vaults
// the catalog's head records (else the call's own), never the URL. It changes
// nothing in the call's answer; the summary line says what happened.
func (h *Handler) rediscover(ctx context.Context, it *runner.Item, req Request, reason staleReason) {
	it.Annotate(slog.String("rediscovery_reason", string(reason)))
	log := h.logger().With("request_id", it.RequestID, "work_item", it.ID, "catalog_id", req.CatalogID, "reason", string(reason))
	switch {
	case h.Rediscoveries == nil:
		it.Annotate(slog.String("rediscovery", rediscoverySkipped))
		log.Warn("the catalog is stale; re-discovery skipped: no discover queue is configured", "variable", startup.EnvDiscoverQueueURL)
		return
	case h.Stale == nil:
		it.Annotate(slog.String("rediscovery", rediscoverySkipped))
		log.Warn("the catalog is stale; re-discovery skipped: the catalog store keeps no schedule", "variable", startup.EnvCatalogTable)
		return
	}
	dreq, ok, err := h.Stale.StaleRequest(ctx, req.CatalogID, req.VaultIDs)
	if err == nil && ok {
		err = h.Rediscoveries.Send(ctx, dreq)
	}
	switch {
	case err != nil:
		it.Annotate(slog.String("rediscovery", rediscoveryFailed))
		log.Warn("the catalog is stale; requesting its re-discovery failed", "error", it.Scrub(err.Error()))
	case !ok:
		it.Annotate(slog.String("rediscovery", rediscoveryDeduplicated))
	default:
		it.Annotate(slog.String("rediscovery", rediscoveryRequested))
		log.Info("the catalog is stale; re-discovery requested")
		runner.EmitCounts(h.Metrics, "call", h.now(), map[string]int{schedule.MetricStaleRequest: 1})
	}
}
