// Package catalog stores each MCP server's tool catalog, versioned and
// replaced atomically: in DynamoDB (Dynamo) or, for local runs, in a
// directory (Dir). Layout and read/write sequences: docs/catalog.md;
// rationale: DESIGN.md.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Sentinels. ErrNotFound: no discovery of the id has been recorded.
// ErrUnavailable: the store did not answer within the caller's budget;
// retry the work item later. ErrInvalidID: the id cannot be a key.
var (
	ErrNotFound    = errors.New("catalog: not found")
	ErrUnavailable = errors.New("catalog: store unavailable")
	ErrInvalidID   = errors.New("catalog: invalid catalog id")
)

// MaxIDBytes is the longest catalog id in bytes.
const MaxIDBytes = 1024

// Discovery is one successful listing of a server, as handed to Put.
// StartedAt orders discoveries of the same id: a later start wins. A zero
// StartedAt means the store's current time. Schedule, when set, is
// recorded with it (see Schedule). OnChange, when set, is recorded as
// the catalog's mode (OnChangeAccept, OnChangeQuarantine); "" keeps the
// recorded one. Define is needed in quarantine mode. ServerDiscovery is the
// connection's mcp.Stats.Discovery, kept for priming calls; one that is
// not JSON or exceeds mcp.MaxDiscoveryBytes is not kept.
type Discovery struct {
	Listing         mcp.Listing
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	ServerDiscovery string
	StartedAt       time.Time
	Schedule        *Schedule
	OnChange        string
	Define          Definer
	// SchemaRules names the rules that judged, and accepted, every tool
	// of Listing (schema.RulesVersion). Put records it on the head with
	// the version it leaves current, in the same write, for Judged; empty
	// records none.
	SchemaRules string
}

// PutResult is the outcome of Put.
//   - Version is the version current after Put: this discovery's, the
//     unchanged one it confirmed, or (Superseded) the newer one that won.
//   - Unchanged: the stored tools already equalled this listing.
//   - Superseded: a discovery that started later was recorded first;
//     nothing of this one is stored. It is not an error.
//   - ToolCount and Refused describe this discovery's listing: refusals from
//     the listing plus tools the store refused (too large even compressed,
//     duplicate names, no model name free).
//   - Changes: the new version against the one it replaced (every tool
//     added when it replaced none); nil when Unchanged or Superseded.
type PutResult struct {
	Version    string
	Unchanged  bool
	Superseded bool
	ToolCount  int
	Refused    []mcp.Refusal
	Changes    *Changes
	// Quarantined lists the current version's quarantined tools, sorted
	// by name; nil unless the catalog is in quarantine mode.
	Quarantined []Quarantined
}

// MaxChangeBytes bounds the names a Changes lists: each name counts its
// length plus 8 bytes, over the three lists together.
const MaxChangeBytes = 64 << 10

// Changes is a version's diff against the version it replaced, by tool
// name. A tool is Changed when its content hash differs: any stored field
// but the model name, which the store assigns. Each list is sorted and
// never nil; when the names pass MaxChangeBytes, each list keeps a sorted
// prefix, filled a name from each list in turn. The counts are always
// complete. The JSON names are those of the discover result's changes.
type Changes struct {
	Added        []string `json:"added" dynamodbav:"added"`
	Removed      []string `json:"removed" dynamodbav:"removed"`
	Changed      []string `json:"changed" dynamodbav:"changed"`
	AddedCount   int      `json:"added_count" dynamodbav:"added_count"`
	RemovedCount int      `json:"removed_count" dynamodbav:"removed_count"`
	ChangedCount int      `json:"changed_count" dynamodbav:"changed_count"`
}

// Catalog is the stored state of one id. Version is empty when only a
// failure has been recorded. Tools and Refused keep the listing's order;
// every tool has its ModelName, distinct within the catalog. Changes is
// the current version's diff against the one it replaced, and ChangedAt
// that version's DiscoveredAt; nil and zero for versions stored before
// diffs were kept. ServerOrigin (the server URL's scheme://host:port;
// the URL itself is sealed, see Dynamo.ServerURL), VaultIDs,
// RefreshInterval and NextDue are the recorded schedule (see Schedule):
// empty when none is recorded, NextDue zero when off the schedule.
// OnChange is the recorded mode ("" before one was), Quarantined the
// tools stored but not callable until approved, sorted by name.
type Catalog struct {
	ID              string
	Version         string
	Tools           []mcp.Tool
	Refused         []mcp.Refusal
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	ServerDiscovery string
	ContentHash     string
	DiscoveredAt    time.Time
	CheckedAt       time.Time
	Changes         *Changes
	ChangedAt       time.Time
	LastFailure     *Failure
	ServerOrigin    string
	VaultIDs        []string
	RefreshInterval time.Duration
	NextDue         time.Time
	OnChange        string
	Quarantined     []Quarantined
}

// Failure is a discovery that failed: its wire error type, message and time.
type Failure struct {
	ErrorType string
	Message   string
	At        time.Time
}

// Membership answers whether a tool is in the current version of a catalog.
// Name is set when the lookup named the tool by its model_name: the tool's
// name as the server lists it, the one to call it by; it is empty when the
// lookup used that name itself, or found nothing. Annotations holds the
// found tool's four hints (read-only, destructive, idempotent, open-world)
// and no other keys; nil when it sets none. Version, ProtocolVersion and
// ServerDiscovery are those of the latest discovery (empty when only a
// failure is recorded). Quarantined: the found tool is quarantined, for
// QuarantineReason ("new tool", or the parts that changed).
type Membership struct {
	Found            bool
	Quarantined      bool
	QuarantineReason string
	Name             string
	Annotations      *mcp.Annotations
	Version          string
	ProtocolVersion  string
	ServerDiscovery  string
}

// Store is what both implementations offer; consumers declare the subset
// they use. Errors wrap ErrNotFound, ErrUnavailable or ErrInvalidID, or
// report a misconfigured store.
type Store interface {
	// Put records a successful discovery (see PutResult) and gives each
	// tool a model name matching ^[a-zA-Z0-9_-]{1,64}$: its name when that
	// matches and no other present tool holds it, and a tool keeps its
	// model name while it keeps its name (DESIGN.md).
	Put(ctx context.Context, id string, d Discovery) (PutResult, error)
	// Get returns the current catalog: one version, complete.
	Get(ctx context.Context, id string) (*Catalog, error)
	// Lookup reports whether toolName is the model name or the name of a
	// tool in the current version; when it is one tool's model name and
	// another's name, the model name wins.
	Lookup(ctx context.Context, id, toolName string) (Membership, error)
	// RecordFailure records a failed discovery; the tools stay as they are.
	RecordFailure(ctx context.Context, id string, f Failure) error
	// ServerURL opens the server URL the catalog's schedule keeps, for a
	// re-discovery; an error wraps ErrNoServerURL when it keeps none.
	ServerURL(ctx context.Context, id string) (string, error)
}

var (
	_ Store = (*Dynamo)(nil)
	_ Store = (*Dir)(nil)
)

// keptDiscovery is the ServerDiscovery Put keeps: d's, or "" when it is
// not JSON or too large.
func keptDiscovery(d Discovery) string {
	if len(d.ServerDiscovery) > mcp.MaxDiscoveryBytes || !json.Valid([]byte(d.ServerDiscovery)) {
		return ""
	}
	return d.ServerDiscovery
}

// ValidateID reports whether id can be a catalog id: 1 to MaxIDBytes bytes
// of valid UTF-8. The error wraps ErrInvalidID.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidID, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidID)
	}
	return nil
}
