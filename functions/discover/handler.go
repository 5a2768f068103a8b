package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/credentials"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/schedule"
	"github.com/mcpfn/mcpfn/shared/schema"
	"github.com/mcpfn/mcpfn/shared/startup"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Request is a discover request (docs/contract.md). ServerURL empty
// re-discovers the catalog from the URL its head keeps sealed.
// RefreshIntervalSeconds nil keeps the catalog's recorded interval; 0
// takes it off the schedule.
type Request struct {
	CatalogID              string   `json:"catalog_id"`
	ServerURL              string   `json:"server_url"`
	VaultIDs               []string `json:"vault_ids,omitempty"`
	RefreshIntervalSeconds *int64   `json:"refresh_interval_seconds,omitempty"`
	TaskToken              string   `json:"task_token,omitempty"`
	OnChange               string   `json:"on_change,omitempty"`
}

// Bounds of refresh_interval_seconds, but 0 (off the schedule).
const (
	MinRefreshInterval = 60
	MaxRefreshInterval = 7 * 24 * 3600
)

// SweepEvent is the sweep's event, {"sweep": {}}: a body whose top-level
// fields include "sweep" is a sweep and nothing else.
type SweepEvent struct {
	Sweep *struct{} `json:"sweep"`
}

// SweepResult is a sweep's answer.
type SweepResult struct {
	Swept schedule.Swept `json:"swept"`
}

// Result is the discover result (docs/contract.md). Refused lists at most
// maxRefusedBytes of entries; RefusedOmitted counts the rest, which the
// catalog holds.
type Result struct {
	CatalogID       string                `json:"catalog_id"`
	Version         string                `json:"version"`
	Unchanged       bool                  `json:"unchanged"`
	Superseded      bool                  `json:"superseded,omitempty"`
	ToolCount       int                   `json:"tool_count"`
	Refused         []mcp.Refusal         `json:"refused"`
	RefusedOmitted  int                   `json:"refused_omitted,omitempty"`
	Changes         *catalog.Changes      `json:"changes,omitempty"`
	Quarantined     []catalog.Quarantined `json:"quarantined,omitempty"`
	ProtocolVersion string                `json:"protocol_version"`
	Server          Server                `json:"server"`
	Requests        int                   `json:"requests"`
	ResponseBytes   int64                 `json:"response_bytes"`
	DurationMS      int64                 `json:"duration_ms"`
}

// Server is the MCP server's reported implementation.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// maxRefusedBytes bounds the refused entries a result carries, so that a
// hostile listing cannot push the result past Step Functions' 256 KiB.
const maxRefusedBytes = 64 << 10

// Conn is the part of an MCP connection a discovery uses.
type Conn interface {
	ListTools(ctx context.Context) (mcp.Listing, error)
	Stats() mcp.Stats
	Close() error
}

var _ Conn = (*mcp.Conn)(nil)

// Store records discoveries and opens the server URL a catalog keeps.
type Store interface {
	Put(ctx context.Context, id string, d catalog.Discovery) (catalog.PutResult, error)
	RecordFailure(ctx context.Context, id string, f catalog.Failure) error
	ServerURL(ctx context.Context, id string) (string, error)
}

var (
	_ Store = (*catalog.Dynamo)(nil)
	_ Store = (*catalog.Dir)(nil)
)

// Schedule is the catalogs' schedule: the sweep and failure backoff.
type Schedule interface {
	Sweep(ctx context.Context, q schedule.Enqueuer, end time.Time) (schedule.Swept, error)
	RecordFailure(ctx context.Context, id string) (schedule.Backoff, error)
}

var _ Schedule = (*schedule.Table)(nil)

// Handler runs one discovery per work item, or a sweep. Connect, Store and
// Credentials are required. HTTPClient nil means mcp.DefaultClient; Policy
// nil means guard.Default(); Logger nil means slog.Default() (credential
// hints and store warnings); Now nil means time.Now. Schedule nil (the
// directory store) records no backoff and refuses sweeps; Queue nil (no
// startup.EnvDiscoverQueueURL) refuses sweeps; Metrics receives the
// sweep's EMF lines (nil: none). Schemas holds schema verdicts across
// items (nil: one cache of schema.DefaultCacheSize shared by every Handler
// in the process); a Store that is a JudgedStore keeps them across
// instances too. Auditor nil audits no quarantine.
type Handler struct {
	Connect     func(ctx context.Context, cfg mcp.Config) (Conn, error)
	HTTPClient  *http.Client
	Policy      *guard.Policy
	Store       Store
	Credentials credentials.Vaults
	Schedule    Schedule
	Queue       schedule.Enqueuer
	Metrics     io.Writer
	Logger      *slog.Logger
	Now         func() time.Time
	Schemas     *schema.Cache
	Auditor     Auditor
}

// sharedSchemas is the verdict cache of Handlers with no Schemas.
var sharedSchemas = sync.OnceValue(func() *schema.Cache { return schema.NewCache(0) })

func (h *Handler) schemas() *schema.Cache {
	if h.Schemas == nil {
		return sharedSchemas()
	}
	return h.Schemas
}

// Process implements runner.Processor: it validates the request, lists the
// server's tools and stores them under catalog_id with its schedule. Every
// failure but a malformed request or server URL is recorded on the
// catalog, which keeps its tools, and backs its schedule off. A sweep event
// runs a sweep instead (see sweep).
func (h *Handler) Process(ctx context.Context, it *runner.Item) (any, error) {
	if isSweep(it.Body) {
		return h.sweep(ctx, it)
	}
	start := h.now()
	var req Request
	if err := runner.Decode(it.Body, &req); err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	it.Annotate(slog.String("catalog_id", req.CatalogID))
	res, err := h.discover(ctx, it, req, start)
	if err != nil {
		if recordable(err) && !wire.MustRequeue(err) {
			h.recordFailure(ctx, it, req.CatalogID, err)
		}
		return nil, err
	}
	return res, nil
}

func (h *Handler) discover(ctx context.Context, it *runner.Item, req Request, start time.Time) (*Result, error) {
	u, serverURL, err := h.server(ctx, it, req)
	if err != nil {
		return nil, err
	}
	it.SetServer(u)
	authz, err := credentials.Credential(ctx, h.Credentials, it, req.VaultIDs, serverURL, h.logger())
	if err != nil {
		return nil, err
	}
	octx, cancel := it.OperationContext(ctx)
	defer cancel()
	client := h.HTTPClient
	if client == nil {
		client = mcp.DefaultClient
	}
	conn, err := h.Connect(octx, authz.Config(mcp.Config{URL: serverURL, HTTPClient: client}))
	if err != nil {
		return nil, wire.Errorf(wire.ClassifyConnect(err), err, "could not connect to the MCP server")
	}
	listing, err := conn.ListTools(octx)
	_ = conn.Close()
	stats := conn.Stats() // after Close: the closing DELETE is one of the requests
	it.SetUsage(stats.ProtocolVersion, stats.Requests, stats.ResponseBytes)
	if err != nil {
		return nil, wire.Errorf(wire.ClassifyConnect(err), err, "could not list the MCP server's tools")
	}
	listing, err = h.checkInCPUSlot(octx, it, req.CatalogID, listing)
	if err != nil {
		return nil, err
	}
	cancel()

	put, err := h.Store.Put(ctx, req.CatalogID, catalog.Discovery{
		Listing:         listing,
		ProtocolVersion: stats.ProtocolVersion,
		ServerName:      stats.ServerName,
		ServerVersion:   stats.ServerVersion,
		ServerDiscovery: stats.Discovery,
		StartedAt:       start,
		Schedule:        &catalog.Schedule{ServerURL: serverURL, VaultIDs: req.VaultIDs, Interval: req.interval()},
		OnChange:        req.OnChange,
		Define:          policy.Parts,
		SchemaRules:     schema.RulesVersion,
	})
	if err != nil {
		return nil, putError(err)
	}
	res := &Result{
		CatalogID:       req.CatalogID,
		Version:         put.Version,
		Unchanged:       put.Unchanged,
		Superseded:      put.Superseded,
		ToolCount:       put.ToolCount,
		Changes:         put.Changes,
		Quarantined:     put.Quarantined,
		ProtocolVersion: stats.ProtocolVersion,
		Server:          Server{Name: stats.ServerName, Version: stats.ServerVersion},
		Requests:        stats.Requests,
		ResponseBytes:   stats.ResponseBytes,
		DurationMS:      h.now().Sub(start).Milliseconds(),
	}
	res.Refused, res.RefusedOmitted = boundRefused(scrubRefused(it, put.Refused))
	it.Annotate(
		slog.String("catalog_version", put.Version),
		slog.Bool("unchanged", put.Unchanged),
		slog.Int("tool_count", put.ToolCount),
		slog.Int("refused", len(put.Refused)),
	)
	h.auditQuarantine(ctx, it, req.CatalogID, put)
	if put.Superseded {
		it.Annotate(slog.Bool("superseded", true))
	}
	return res, nil
}

// recordFailure records err on the catalog. A failure to record is logged:
// the discovery's own error is what the caller needs.
func (h *Handler) recordFailure(ctx context.Context, it *runner.Item, id string, err error) {
	f := catalog.Failure{ErrorType: string(wire.TypeOf(err)), Message: it.PublicMessage(err), At: h.now()}
	if rerr := h.Store.RecordFailure(ctx, id, f); rerr != nil {
		h.logger().Warn("recording the discovery failure failed", "request_id", it.RequestID, "work_item", it.ID, "catalog_id", id, "error", it.Scrub(rerr.Error()))
	}
	if h.Schedule == nil {
		return
	}
	b, berr := h.Schedule.RecordFailure(ctx, id)
	switch {
	case berr != nil:
		h.logger().Warn("recording the schedule's backoff failed", "request_id", it.RequestID, "work_item", it.ID, "catalog_id", id, "error", it.Scrub(berr.Error()))
	case b.Failures > 0:
		it.Annotate(slog.Int("failures", b.Failures), slog.String("retry_after", b.RetryAfter.UTC().Format(time.RFC3339)))
	}
}

// isSweep reports whether body is a JSON object with a top-level "sweep"
// field (names match exactly, as runner.Decode's do).
func isSweep(body []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	_, ok := fields["sweep"]
	return ok
}

// sweep runs one sweep of the schedule within the item's operation budget
// and answers its counts; it writes them as metrics too. Only {"sweep": {}}
// invoked directly is a sweep: another field, a sweep that is not an empty
// object, a sweep from a queue, no queue and no schedule are each an
// invalid_request_error.
func (h *Handler) sweep(ctx context.Context, it *runner.Item) (any, error) {
	var ev SweepEvent
	if err := runner.Decode(it.Body, &ev); err != nil {
		return nil, err
	}
	it.Annotate(slog.String("event", "sweep"))
	switch {
	case ev.Sweep == nil:
		return nil, wire.Errorf(wire.InvalidRequest, nil, `sweep must be an empty object: {"sweep": {}}`)
	case it.Source != runner.Direct:
		return nil, wire.Errorf(wire.InvalidRequest, nil, "a sweep is invoked directly (by its schedule), not through a queue")
	case h.Queue == nil:
		return nil, wire.Errorf(wire.InvalidRequest, nil, "cannot sweep: no discover queue is configured (set %s)", startup.EnvDiscoverQueueURL)
	case h.Schedule == nil:
		return nil, wire.Errorf(wire.InvalidRequest, nil, "cannot sweep: the catalog store keeps no schedule (set %s)", startup.EnvCatalogTable)
	}
	octx, cancel := it.OperationContext(ctx)
	defer cancel()
	end, _ := ctx.Deadline() // sending and undoing the last claims may use the reserve
	sw, err := h.Schedule.Sweep(octx, h.Queue, end)
	runner.EmitCounts(h.Metrics, "discover", h.now(), sw.Counts())
	it.Annotate(
		slog.Int("due", sw.Due),
		slog.Int("enqueued", sw.Enqueued),
		slog.Int("backing_off", sw.BackingOff),
		slog.Int("unanswered", sw.Unanswered),
		slog.Int("stranded", sw.Stranded),
		slog.Int("overdue_3x", sw.Overdue3x),
		slog.Bool("complete", sw.Complete),
	)
	if err != nil {
		return nil, wire.Errorf(wire.Internal, err, "the sweep failed after enqueuing %d catalogs", sw.Enqueued)
	}
	return SweepResult{Swept: sw}, nil
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

func (h *Handler) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

// scrubRefused returns the refusals with it's secrets scrubbed: a
// refusal quotes the server's own text (a tool's name).
func scrubRefused(it *runner.Item, all []mcp.Refusal) []mcp.Refusal {
	out := make([]mcp.Refusal, len(all))
	for i, r := range all {
		out[i] = mcp.Refusal{Name: it.Scrub(r.Name), Reason: it.Scrub(r.Reason)}
	}
	return out
}

// boundRefused returns the refused entries that fit maxRefusedBytes (never
// nil) and how many were left out.
func boundRefused(all []mcp.Refusal) ([]mcp.Refusal, int) {
	out := []mcp.Refusal{}
	size := 0
	for i, r := range all {
		size += len(r.Name) + len(r.Reason) + 32 // JSON punctuation and escapes, roughly
		if size > maxRefusedBytes {
			return out, len(all) - i
		}
		out = append(out, r)
	}
	return out, 0
}

// interval is the refresh interval to record: nil keeps the recorded one.
func (r Request) interval() *time.Duration {
	if r.RefreshIntervalSeconds == nil {
		return nil
	}
	d := time.Duration(*r.RefreshIntervalSeconds) * time.Second
	return &d
}

// validate checks the fields Decode cannot, but the server URL.
func (r Request) validate() error {
	if r.CatalogID == "" {
		return wire.Errorf(wire.InvalidRequest, nil, "catalog_id is required")
	}
	if err := catalog.ValidateID(r.CatalogID); err != nil {
		return wire.Errorf(wire.InvalidRequest, err, "catalog_id")
	}
	if v := r.RefreshIntervalSeconds; v != nil && *v != 0 && (*v < MinRefreshInterval || *v > MaxRefreshInterval) {
		return wire.Errorf(wire.InvalidRequest, nil, "refresh_interval_seconds is %d: want 0 (off the schedule) or %d to %d", *v, MinRefreshInterval, MaxRefreshInterval)
	}
	for _, id := range r.VaultIDs {
		if err := vault.ValidateVaultID(id); err != nil {
			return wire.Errorf(wire.InvalidRequest, err, "vault_ids")
		}
	}
	return validOnChange(r.OnChange)
}
