package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/text"
)

// Dir is a Store in a local directory, for runs without a DynamoDB-compatible
// server. Each catalog is a subdirectory: one file per version, written
// first, and head.json, replaced by an atomic rename. Writers of one
// catalog take a file lock, so goroutines and processes may share a Dir.
type Dir struct {
	root string
	now  func() time.Time
}

const (
	headFile    = "head.json"
	lockFile    = ".lock"
	versionExt  = ".json"
	lockPoll    = 10 * time.Millisecond
	maxDirEntry = 200 // longest escaped id used as a directory name
)

// NewDir returns a store rooted at dir, creating the directory if needed.
func NewDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return &Dir{root: dir, now: time.Now}, nil
}

type dirHead struct {
	ID              string    `json:"id"`
	Version         string    `json:"version,omitempty"`
	Latest          string    `json:"latest,omitempty"`
	ContentHash     string    `json:"content_hash,omitempty"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	ServerName      string    `json:"server_name,omitempty"`
	ServerVersion   string    `json:"server_version,omitempty"`
	ServerDiscovery string    `json:"server_discovery,omitempty"`
	DiscoveredAt    time.Time `json:"discovered_at"`
	CheckedAt       time.Time `json:"checked_at"`
	ToolCount       int       `json:"tool_count"`
	RefusedCount    int       `json:"refused_count"`
	Names           []string  `json:"names,omitempty"` // sorted
	// Hashes holds each of Names' tool hash (its entry's toolHash, hex), in
	// its order.
	Hashes []string `json:"hashes,omitempty"`
	// Hints holds each of Names' hintsByte, in its order.
	Hints   []byte   `json:"hints,omitempty"`
	Changes *Changes `json:"changes,omitempty"` // Changes' own JSON names
	// Models maps every model name that is not its tool's name to the name.
	Models      map[string]string `json:"models,omitempty"`
	LastFailure *dirFailure       `json:"last_failure,omitempty"`
}

// prior is the model-name prior of h's version: every name in it has the
// model name Models records, else its default.
func (h dirHead) prior() prior {
	if h.Version == "" {
		return prior{}
	}
	pr := prior{exceptions: map[uint64]int{}} // as priorOf, without a map of every name
	for m, n := range h.Models {
		if d := mappedDigits(m); d != "" && m != defaultModelName(n) {
			pr.exceptions[nameKey(n)] = len(d)
		}
	}
	names := h.Names
	pr.kept = func(name string) (bool, error) { _, ok := slices.BinarySearch(names, name); return ok, nil }
	return pr
}

// diff is p's diff against h's version, from h's hashes.
func (h dirHead) diff(dir string, p prepared) (*Changes, error) {
	if h.Version == "" {
		return allAdded(p), nil
	}
	d := newDiffer(p)
	for i, name := range h.Names {
		var th [toolHashLen]byte
		if n, err := hex.Decode(th[:], []byte(h.Hashes[i])); err != nil || n != toolHashLen {
			return nil, fmt.Errorf("catalog: %s: malformed tool hash %q", dir, h.Hashes[i])
		}
		_ = d.old(sha256.Sum256([]byte(name)), th, func() (string, error) { return name, nil })
	}
	return d.changes(), nil
}

// check fails unless h, read from dir, names no version or records its
// diff and a tool hash and hints byte for every name.
func (h dirHead) check(dir string) error {
	if h.Version != "" && (h.Changes == nil || len(h.Hashes) != len(h.Names) || len(h.Hints) != len(h.Names)) {
		return fmt.Errorf("catalog: %s: head of version %s lacks its diff, tool hashes or hints", dir, h.Version)
	}
	return nil
}

type dirFailure struct {
	ErrorType string    `json:"error_type"`
	Message   string    `json:"message"`
	At        time.Time `json:"at"`
}

// Put records d as the catalog of id, with Dynamo's outcomes; it refuses
// OnChangeQuarantine (ErrQuarantineUnsupported).
func (s *Dir) Put(ctx context.Context, id string, d Discovery) (PutResult, error) {
	if err := ValidateID(id); err != nil {
		return PutResult{}, err
	}
	if err := ValidateOnChange(d.OnChange); err != nil {
		return PutResult{}, err
	}
	if d.OnChange == OnChangeQuarantine {
		return PutResult{}, fmt.Errorf("%w: the directory store keeps no approvals; use the DynamoDB store", ErrQuarantineUnsupported)
	}
	if d.StartedAt.IsZero() {
		d.StartedAt = s.now()
	}
	p := prepare(id, d)
	dir := s.catalogDir(id)
	unlock, err := s.lock(ctx, dir)
	if err != nil {
		return PutResult{}, err
	}
	defer unlock()

	h, err := readHead(dir)
	if err != nil {
		return PutResult{}, err
	}
	if err := p.finish(h.prior()); err != nil {
		return PutResult{}, err
	}
	res := PutResult{ToolCount: len(p.entries), Refused: p.refused}
	h.ID = id
	if h.Latest > p.key {
		res.Version, res.Superseded = h.Version, true
		return res, nil
	}
	h.Latest, h.CheckedAt = p.key, p.started
	h.ProtocolVersion, h.ServerName, h.ServerVersion = d.ProtocolVersion, d.ServerName, d.ServerVersion
	h.ServerDiscovery = keptDiscovery(d)
	if h.Version != "" && h.ContentHash == p.hash {
		if err := writeJSON(dir, headFile, h); err != nil {
			return PutResult{}, err
		}
		res.Version, res.Unchanged = h.Version, true
		return res, nil
	}
	ch, err := h.diff(dir, p)
	if err != nil {
		return PutResult{}, err
	}
	h.Changes = ch
	order := make([]int, len(p.entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(p.entries[a].tool.Name, p.entries[b].tool.Name) })
	h.Names, h.Hashes = make([]string, len(p.entries)), make([]string, len(p.entries))
	h.Hints = make([]byte, len(p.entries))
	for i, j := range order {
		h.Names[i], h.Hashes[i] = p.entries[j].tool.Name, hex.EncodeToString(p.entries[j].toolHash[:])
		h.Hints[i] = hintsByte(p.entries[j].tool.Annotations)
	}
	h.Models = nil
	for _, e := range p.entries {
		if e.tool.ModelName != e.tool.Name {
			if h.Models == nil {
				h.Models = map[string]string{}
			}
			h.Models[e.tool.ModelName] = e.tool.Name
		}
	}
	if err := writeFile(dir, p.key+versionExt, func(w io.Writer) error { return encodeVersion(w, p) }); err != nil {
		return PutResult{}, err
	}
	h.Version, h.ContentHash, h.DiscoveredAt = p.key, p.hash, p.started
	h.ToolCount, h.RefusedCount = len(p.entries), len(p.refused)
	if err := writeJSON(dir, headFile, h); err != nil {
		return PutResult{}, err
	}
	s.sweep(dir, p.key)
	res.Version, res.Changes = p.key, ch
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sweep deletes every version file but keep's: superseded ones and any a
// crashed writer left. Callers hold the lock.
func (s *Dir) sweep(dir, keep string) {
	for _, v := range versionFiles(dir) {
		if v != keep {
			_ = os.Remove(filepath.Join(dir, v+versionExt))
		}
	}
}

// Get returns the current catalog of id; a version replaced while being
// read is read again.
func (s *Dir) Get(ctx context.Context, id string) (*Catalog, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	dir := s.catalogDir(id)
	for range maxRounds {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		h, err := readHead(dir)
		if err != nil {
			return nil, err
		}
		if h.ID == "" {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		c := &Catalog{
			ID: id, Version: h.Version, ProtocolVersion: h.ProtocolVersion,
			ServerName: h.ServerName, ServerVersion: h.ServerVersion, ServerDiscovery: h.ServerDiscovery, ContentHash: h.ContentHash,
			DiscoveredAt: h.DiscoveredAt, CheckedAt: h.CheckedAt,
		}
		if f := h.LastFailure; f != nil {
			c.LastFailure = &Failure{ErrorType: f.ErrorType, Message: f.Message, At: f.At}
		}
		if ch := h.Changes; ch != nil {
			c.Changes = &Changes{Added: nonNil(ch.Added), Removed: nonNil(ch.Removed), Changed: nonNil(ch.Changed),
				AddedCount: ch.AddedCount, RemovedCount: ch.RemovedCount, ChangedCount: ch.ChangedCount}
			c.ChangedAt = h.DiscoveredAt
		}
		if h.Version == "" {
			return c, nil
		}
		var v dirVersion
		if err := readJSON(filepath.Join(dir, h.Version+versionExt), &v); errors.Is(err, fs.ErrNotExist) {
			if again, err := readHead(dir); err == nil && again.Version == h.Version {
				return nil, missingFile(id, h.Version)
			}
			continue // replaced and swept since the head was read
		} else if err != nil {
			return nil, err
		}
		c.Tools = make([]mcp.Tool, len(v.Tools))
		for i, t := range v.Tools {
			c.Tools[i] = t.tool()
		}
		c.Refused = v.Refused
		if c.Refused == nil {
			c.Refused = []mcp.Refusal{}
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: catalog %q changed %d times during one read", ErrUnavailable, id, maxRounds)
}

// Lookup reports whether toolName is the model name or the name of a tool
// in the current version of id (a model name wins), from the head file
// alone.
func (s *Dir) Lookup(ctx context.Context, id, toolName string) (Membership, error) {
	if err := ValidateID(id); err != nil {
		return Membership{}, err
	}
	if err := ctx.Err(); err != nil {
		return Membership{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	h, err := readHead(s.catalogDir(id))
	if err != nil {
		return Membership{}, err
	}
	if h.ID == "" {
		return Membership{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	m := Membership{Version: h.Version, ProtocolVersion: h.ProtocolVersion, ServerDiscovery: h.ServerDiscovery}
	name := toolName
	if n, ok := h.Models[toolName]; ok {
		m.Found, m.Name, name = true, n, n
	}
	i, in := slices.BinarySearch(h.Names, name)
	m.Found = m.Found || in
	if m.Found {
		m.Annotations = hintsOf(h.Hints[i])
	}
	return m, nil
}

// RecordFailure records f as the last failure of id unless a later one is
// recorded; the tools stay as they are. A zero f.At means now.
func (s *Dir) RecordFailure(ctx context.Context, id string, f Failure) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if f.At.IsZero() {
		f.At = s.now()
	}
	dir := s.catalogDir(id)
	unlock, err := s.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := readHead(dir)
	if err != nil {
		return err
	}
	if h.LastFailure != nil && !h.LastFailure.At.Before(f.At) {
		return nil
	}
	h.ID = id
	h.LastFailure = &dirFailure{
		ErrorType: text.Truncate(f.ErrorType, maxFailureType),
		Message:   text.Truncate(f.Message, maxFailureText),
		At:        f.At.UTC(),
	}
	return writeJSON(dir, headFile, h)
}

// StoredVersions lists every version with a file under id, sorted.
func (s *Dir) StoredVersions(_ context.Context, id string) ([]string, error) {
	return versionFiles(s.catalogDir(id)), nil
}

func (s *Dir) catalogDir(id string) string {
	name := "c_" + url.PathEscape(id)
	if len(name) > maxDirEntry {
		sum := sha256.Sum256([]byte(id))
		name = "h_" + hex.EncodeToString(sum[:])
	}
	return filepath.Join(s.root, name)
}
