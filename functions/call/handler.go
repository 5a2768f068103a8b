package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/credentials"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/startup"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Conn is the part of an MCP connection a call uses.
type Conn interface {
	CallTool(ctx context.Context, name string, arguments json.RawMessage) (*mcp.CallResult, error)
	Stats() mcp.Stats
	Close() error
}

var _ Conn = (*mcp.Conn)(nil)

// Catalog answers tool membership.
type Catalog interface {
	Lookup(ctx context.Context, id, toolName string) (catalog.Membership, error)
}

// Ledger records calls by idempotency key.
type Ledger interface {
	Begin(ctx context.Context, key string) (ledger.Entry, error)
	Complete(ctx context.Context, key string, o ledger.Outcome) error
	Release(ctx context.Context, key string) error
}

// Stale deduplicates the re-discoveries calls request (at most one per
// catalog per minute) and says with which vaults to discover the catalog;
// discover opens the server URL the catalog's head keeps sealed.
type Stale interface {
	StaleRequest(ctx context.Context, id string, vaultIDs []string) (schedule.Request, bool, error)
}

// Rediscoveries sends a discover request to the discover queue.
type Rediscoveries interface {
	Send(ctx context.Context, req schedule.Request) error
}

var (
	_ Stale         = (*schedule.Table)(nil)
	_ Rediscoveries = (*schedule.Sender)(nil)
	_ Catalog       = (*catalog.Dynamo)(nil)
	_ Catalog       = (*catalog.Dir)(nil)
	_ Ledger        = (*ledger.Dynamo)(nil)
	_ Ledger        = (*ledger.Memory)(nil)
)

// Handler runs one tool call per work item. Connect, Catalog, Credentials
// and Ledger are required. HTTPClient nil means mcp.CallClient; Policy nil
// means guard.Default(); Render bounds the result; Logger nil means
// slog.Default() (used for credential hints). A call that finds its
// catalog stale requests a re-discovery through Stale and Rediscoveries
// (see rediscover); either nil skips it with a warning. Metrics receives
// the re-discoveries' EMF lines (nil: none).
type Handler struct {
	Connect       func(ctx context.Context, cfg mcp.Config) (Conn, error)
	HTTPClient    *http.Client
	Policy        *guard.Policy
	Catalog       Catalog
	Credentials   credentials.Vaults
	Ledger        Ledger
	Render        render.Options
	Stale         Stale
	Rediscoveries Rediscoveries
	Metrics       io.Writer
	Logger        *slog.Logger
	Now           func() time.Time
	TaskPollMin   time.Duration // floor of poll_after_seconds; 0 means startup.DefaultTaskPollMin
	Redeliver     Redeliverer   // nil: an SQS call without a task token runs synchronously (redeliver.go)
	Policies      Policies      // nil: no catalog has a policy (permit.go)
	PolicyCache   *policy.Cache // nil: each policy compiled per call
	Audit         Auditor       // nil: decisions are not audited
}

// Process implements runner.Processor: it validates the request, checks the
// tool against the catalog when catalog_id is set, takes the idempotency
// lease, calls the tool and renders the tool_result. A pending call from an
// SQS record without a task token keeps going by itself (keepGoing).
func (h *Handler) Process(ctx context.Context, it *runner.Item) (any, error) {
	var req Request
	if err := runner.Decode(it.Body, &req); err != nil {
		return nil, err
	}
	u, err := req.validate(h.Policy)
	if err != nil {
		return nil, err
	}
	it.SetServer(u)
	it.Annotate(slog.String("tool", req.ToolName))
	if req.CatalogID != "" {
		it.Annotate(slog.String("catalog_id", req.CatalogID))
	}

	doc := h.readPolicy(ctx, req)
	prime, err := h.member(ctx, it, req)
	if err != nil {
		return nil, err
	}
	v, err := h.verdict(ctx, it, req, prime, doc)
	if err != nil {
		return nil, err
	}
	key, kind := idempotencyKey(req, it)
	switch v.Decision {
	case policy.Deny:
		return nil, h.refuse(ctx, it, req, prime, v)
	case policy.Ask:
		if err := askable(req, key, it.Source != runner.SQS || it.TaskToken != "", v); err != nil {
			return nil, err
		}
	}
	if key == "" {
		if req.Cancel || req.InputResponses != nil {
			return nil, wire.Errorf(wire.InvalidRequest, nil, "cancel and input_responses continue a pending call: they need its idempotency key")
		}
		out, err := h.call(ctx, it, req, prime, h.start(req, prime, false))
		if err != nil {
			return nil, err
		}
		return out.res, nil
	}
	it.Annotate(slog.String("idempotency_key", kind))
	out, err := h.keyed(ctx, it, req, prime, key, v)
	if h.loops(it) {
		return h.keepGoing(ctx, it, key, kind, out, err)
	}
	return out, err
}

// keyed runs a call that has an idempotency key: replayed, continued or
// started under the key's lease; one its policy asks approval for (v)
// waits for it (permit.go).
func (h *Handler) keyed(ctx context.Context, it *runner.Item, req Request, prime primer, key string, v policy.Verdict) (any, error) {
	entry, err := h.Ledger.Begin(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrInProgress) && it.Source != runner.SQS && it.TaskToken == "":
		return h.runningElsewhere(it, err), nil
	case errors.Is(err, ledger.ErrInProgress):
		return nil, &wire.Error{Type: wire.Internal, Message: "another delivery of this call is in progress; retry later" + prime.idempotentNote(), Err: err, Requeue: true}
	case err != nil:
		return nil, wire.Errorf(wire.Internal, err, "the call ledger failed")
	case entry.Done:
		it.Annotate(slog.Bool("replayed", true))
		return replay(entry.Outcome, prime.idempotentNote())
	case entry.Pending != nil && entry.Pending.Approval && !req.Cancel:
		it.Annotate(slog.Bool("continued", true))
		if v.Decision == policy.Ask {
			return h.approval(ctx, it, req, prime, key, v, entry.Pending)
		} // the policy no longer asks: the call starts below
	case entry.Pending != nil:
		it.Annotate(slog.Bool("continued", true))
		return h.continueCall(ctx, it, req, prime, key, entry.Pending)
	case entry.TookOver:
		it.Annotate(slog.Bool("lease_taken_over", true))
	}
	if req.Cancel || req.InputResponses != nil {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.InvalidRequest, nil, "cancel and input_responses continue a pending call, and none is pending under this key")
	}
	if v.Decision == policy.Ask {
		return h.approval(ctx, it, req, prime, key, v, nil)
	}
	// Only a caller that can send the request again continues a pending
	// call; an SQS message without a task token sends itself (loops).
	continuable := it.Source != runner.SQS || it.TaskToken != "" || h.loops(it)
	out, err := h.call(ctx, it, req, prime, h.start(req, prime, continuable))
	if out.pending != nil {
		return h.suspend(ctx, it, key, h.newPending(req, prime, out), out)
	}
	return h.finish(ctx, it, key, out.res, out.ran, err)
}

// primer is what a catalog tells a call: the tool's name as the server
// lists it (the request may name its model_name), the protocol version the
// latest discovery negotiated, and that discovery's server/discover answer.
type primer struct {
	toolName        string
	protocolVersion string
	discovery       string
	hints           *mcp.Annotations // the catalog's hints for the tool, nil without
	version         string           // the catalog version checked, "" without a catalog
}

// idempotentNote is what a refused or replayed redelivery adds when the
// catalog marks the tool idempotent: mcpfn still calls at most once per
// key, and the caller may call again under a new one.
func (p primer) idempotentNote() string {
	if p.hints == nil || p.hints.IdempotentHint == nil || !*p.hints.IdempotentHint {
		return ""
	}
	return "; the server marks this tool idempotent (idempotentHint), so calling it again under a new idempotency key is safe by its word"
}

// member checks the tool, by name or model_name, against the stored
// catalog and returns what the catalog primes the call with (without a
// catalog, only the requested name).
func (h *Handler) member(ctx context.Context, it *runner.Item, req Request) (primer, error) {
	if req.CatalogID == "" {
		return primer{toolName: req.ToolName}, nil
	}
	m, err := h.Catalog.Lookup(ctx, req.CatalogID, req.ToolName)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return primer{}, wire.Errorf(wire.InvalidRequest, nil, "tool %q cannot be checked: catalog %q has not been discovered", req.ToolName, req.CatalogID)
	case errors.Is(err, catalog.ErrInvalidID):
		return primer{}, wire.Errorf(wire.InvalidRequest, err, "catalog_id")
	case err != nil:
		return primer{}, wire.Errorf(wire.Internal, err, "the catalog store failed")
	case m.Version == "":
		return primer{}, wire.Errorf(wire.InvalidRequest, nil, "tool %q cannot be checked: catalog %q has no stored tools (its discoveries failed)", req.ToolName, req.CatalogID)
	case !m.Found:
		h.rediscover(ctx, it, req, staleNotInCatalog)
		return primer{}, wire.Errorf(wire.InvalidRequest, nil, "tool %q is not in catalog %q (version %s)", req.ToolName, req.CatalogID, m.Version)
	}
	if err := refuseQuarantined(req, m); err != nil {
		return primer{}, err
	}
	it.Annotate(slog.String("catalog_version", m.Version))
	annotateHints(it, m.Annotations)
	name := req.ToolName
	if m.Name != "" && m.Name != name {
		name = m.Name
		it.Annotate(slog.String("server_tool", name))
	}
	return primer{toolName: name, protocolVersion: m.ProtocolVersion, discovery: m.ServerDiscovery, hints: m.Annotations, version: m.Version}, nil
}

// annotateHints puts the catalog's read-only and idempotent hints for the
// tool on the summary line, each only when the server gave it.
func annotateHints(it *runner.Item, a *mcp.Annotations) {
	if a == nil {
		return
	}
	if a.ReadOnlyHint != nil {
		it.Annotate(slog.Bool("read_only_hint", *a.ReadOnlyHint))
	}
	if a.IdempotentHint != nil {
		it.Annotate(slog.Bool("idempotent_hint", *a.IdempotentHint))
	}
}

// callOutcome is what call produced: a rendered res, or a pending answer;
// ran reports whether a request may have reached the server (the tool may
// have run); version is the negotiated protocol version.
type callOutcome struct {
	res     *render.ToolResult
	pending *mcp.Pending
	ran     bool
	version string
}

// call connects and takes one step (a call, a poll, an update, a cancel),
// rendering a result the way every step renders it.
func (h *Handler) call(ctx context.Context, it *runner.Item, req Request, p primer, step step) (out callOutcome, err error) {
	authz, err := credentials.Credential(ctx, h.Credentials, it, req.VaultIDs, req.ServerURL, h.logger())
	if err != nil {
		return out, err
	}
	octx, cancel := it.OperationContext(ctx)
	defer cancel()
	client := h.HTTPClient
	if client == nil {
		client = mcp.CallClient
	}
	conn, err := h.Connect(octx, authz.Config(mcp.Config{URL: req.ServerURL, HTTPClient: client,
		ProtocolVersion: p.protocolVersion, Discovery: p.discovery}))
	if err != nil {
		return out, wire.Errorf(wire.ClassifyConnect(err), err, "could not connect to the MCP server")
	}
	var stale staleReason // set below; requested once the connection is closed
	defer func() {
		if stale != "" {
			h.rediscover(ctx, it, req, stale)
		}
	}()
	defer func() {
		_ = conn.Close()
		s := conn.Stats() // after Close: the closing DELETE is one of the requests
		it.SetUsage(s.ProtocolVersion, s.Requests, s.ResponseBytes)
		h.notePriming(it, s)
	}()
	out.version = conn.Stats().ProtocolVersion
	answer, err := step(octx, conn)
	var result *mcp.CallResult
	if err == nil {
		if answer.Pending != nil {
			out.pending, out.ran = answer.Pending, true
			return out, nil
		}
		result = answer.Result
	}
	if req.CatalogID != "" {
		stale = staleness(err, p.protocolVersion, conn.Stats().ProtocolVersion)
	}
	var tr render.ToolResult
	switch {
	case err == nil:
		opts := h.Render
		opts.Scrub = it.ScrubSecrets
		var info render.Info
		var rerr error
		tr, info, rerr = render.Render(ctx, req.ToolUseID, result, opts)
		it.Annotate(slog.Int("result_bytes", info.Bytes), slog.Bool("is_error", tr.IsError))
		if info.Truncated {
			it.Annotate(slog.Bool("truncated", true), slog.Int("full_bytes", info.FullBytes))
		}
		if info.StoredKey != "" {
			it.Annotate(slog.String("stored_key", info.StoredKey), slog.Int("full_bytes", info.FullBytes))
		}
		if rerr != nil {
			it.Annotate(slog.String("store_error", it.Scrub(rerr.Error())))
		}
	case errors.Is(err, mcp.ErrUnauthorized), errors.Is(err, guard.ErrDenied):
		// Refused before the server ran anything: a retry is safe.
		return out, wire.Errorf(wire.ClassifyConnect(err), err, "the MCP server refused the call")
	case errors.Is(err, mcp.ErrServerAnswered):
		tr = render.Refusal(req.ToolUseID, err, it.Scrub)
		it.Annotate(slog.Bool("is_error", true), slog.Bool("refused", true), slog.String("refusal", it.Scrub(err.Error())))
	default:
		out.ran = true
		return out, wire.Errorf(wire.ClassifyConnect(err), err, "the tool call failed")
	}
	out.res, out.ran = &tr, true
	return out, nil
}

func (h *Handler) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

// notePriming puts on the summary line whether the connection was primed
// from the catalog and whether it had to connect again, unprimed; a
// fallback is also a warning of its own: the catalog is out of date.
func (h *Handler) notePriming(it *runner.Item, s mcp.Stats) {
	if !s.Primed {
		return
	}
	it.Annotate(slog.Bool("primed", true))
	if s.PrimeFallback {
		it.Annotate(slog.Bool("prime_fallback", true))
		h.logger().Warn("the primed call was refused as a legacy server; connected again unprimed",
			"request_id", it.RequestID, "work_item", it.ID, "protocol_version", s.ProtocolVersion)
	}
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

// ResultsKeyPrefix prefixes the S3 keys of stored oversized results.
const ResultsKeyPrefix = "results/"

// LedgerLease is how long a delivery holds a call's idempotency key: the
// longest it can run after taking it (the operation timeout), plus the
// reserve and a minute of margin for clock skew.
func LedgerLease(s startup.Settings) time.Duration {
	return s.OperationTimeout + s.Reserve + time.Minute
}
