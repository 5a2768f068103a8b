package catalog

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// Hashes holds each of Names' tool hash (toolHash, hex), in its order;
	// absent in versions stored before diffs, as is Changes.
	Hashes []string `json:"hashes,omitempty"`
	// Hints holds each of Names' hintsByte, in its order; absent before
	// Lookup reported hints.
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

// diff is p's diff against h's version: from h's hashes, or for a version
// stored before them, from its file.
func (h dirHead) diff(dir string, p prepared) (*Changes, error) {
	if h.Version == "" {
		return allAdded(p), nil
	}
	d := newDiffer(p)
	if h.Changes != nil && len(h.Hashes) == len(h.Names) {
		for i, name := range h.Names {
			var th [toolHashLen]byte
			if n, err := hex.Decode(th[:], []byte(h.Hashes[i])); err != nil || n != toolHashLen {
				return nil, fmt.Errorf("catalog: %s: malformed tool hash %q", dir, h.Hashes[i])
			}
			_ = d.old(sha256.Sum256([]byte(name)), th, func() (string, error) { return name, nil })
		}
		return d.changes(), nil
	}
	var v dirVersion
	if err := readJSON(filepath.Join(dir, h.Version+versionExt), &v); err != nil {
		return nil, err
	}
	for _, dt := range v.Tools {
		t := dt.tool()
		_ = d.old(sha256.Sum256([]byte(t.Name)), toolHash(t), func() (string, error) { return t.Name, nil })
	}
	return d.changes(), nil
}

type dirFailure struct {
	ErrorType string    `json:"error_type"`
	Message   string    `json:"message"`
	At        time.Time `json:"at"`
}

type dirVersion struct {
	Tools   []dirTool     `json:"tools"`
	Refused []mcp.Refusal `json:"refused"`
}

// dirTool keeps schemas and meta as bytes (base64 in JSON) so they
// round-trip exactly. A tool without model_name has its name's default.
type dirTool struct {
	Name         string          `json:"name"`
	ModelName    string          `json:"model_name,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  []byte          `json:"input_schema"`
	OutputSchema []byte          `json:"output_schema,omitempty"`
	Annotations  *dirAnnotations `json:"annotations,omitempty"`
	Meta         []byte          `json:"meta,omitempty"`
}

type dirAnnotations struct {
	ReadOnlyHint    *bool  `json:"read_only_hint,omitempty"`
	DestructiveHint *bool  `json:"destructive_hint,omitempty"`
	IdempotentHint  *bool  `json:"idempotent_hint,omitempty"`
	OpenWorldHint   *bool  `json:"open_world_hint,omitempty"`
	Other           []byte `json:"other,omitempty"`
}

func toDirTool(t mcp.Tool) dirTool {
	d := dirTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		OutputSchema: t.OutputSchema, Meta: t.Meta}
	if t.ModelName != t.Name {
		d.ModelName = t.ModelName
	}
	if a := t.Annotations; a != nil {
		d.Annotations = &dirAnnotations{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint, a.Other}
	}
	return d
}

func (d dirTool) tool() mcp.Tool {
	t := mcp.Tool{Name: d.Name, ModelName: d.ModelName, Title: d.Title, Description: d.Description,
		InputSchema: d.InputSchema, OutputSchema: nonEmpty(d.OutputSchema), Meta: nonEmpty(d.Meta)}
	if t.ModelName == "" {
		t.ModelName = defaultModelName(t.Name)
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &mcp.Annotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint, Other: nonEmpty(a.Other)}
	}
	return t
}

// Put records d as the catalog of id, with Dynamo's outcomes.
func (s *Dir) Put(ctx context.Context, id string, d Discovery) (PutResult, error) {
	if err := ValidateID(id); err != nil {
		return PutResult{}, err
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
	switch {
	case !m.Found:
	case len(h.Hints) == len(h.Names):
		m.Annotations = hintsOf(h.Hints[i])
	default: // a head from before hints: the version file has them
		var v dirVersion
		if err := readJSON(filepath.Join(s.catalogDir(id), h.Version+versionExt), &v); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Membership{}, err
		}
		for _, t := range v.Tools {
			if t.Name == name {
				m.Annotations = hintsOnly(t.tool().Annotations)
			}
		}
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

// lock takes the catalog's file lock, polling until ctx ends.
func (s *Dir) lock(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("catalog: lock %s: %w", dir, err)
		}
		if ok {
			return func() { f.Close() }, nil // closing releases the lock
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%w: lock %s: %w", ErrUnavailable, dir, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func versionFiles(dir string) []string {
	des, _ := os.ReadDir(dir)
	var vs []string
	for _, de := range des {
		n := de.Name()
		if n != headFile && strings.HasSuffix(n, versionExt) && !strings.HasPrefix(n, ".") {
			vs = append(vs, strings.TrimSuffix(n, versionExt))
		}
	}
	slices.Sort(vs)
	return vs
}

// readHead reads head.json; a missing one yields the zero dirHead.
func readHead(dir string) (dirHead, error) {
	var h dirHead
	err := readJSON(filepath.Join(dir, headFile), &h)
	if errors.Is(err, fs.ErrNotExist) {
		return dirHead{}, nil
	}
	return h, err
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("catalog: %s: %w", path, err)
	}
	return nil
}

// encodeVersion writes p as a dirVersion one tool at a time, so a version
// never exists as one buffer.
func encodeVersion(w io.Writer, p prepared) error {
	enc := json.NewEncoder(w)
	if _, err := io.WriteString(w, `{"tools":[`); err != nil {
		return err
	}
	for i, e := range p.entries {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(toDirTool(e.tool)); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, `],"refused":`); err != nil {
		return err
	}
	if err := enc.Encode(p.refused); err != nil {
		return err
	}
	_, err := io.WriteString(w, "}")
	return err
}

// writeJSON writes v to dir/name atomically (see writeFile).
func writeJSON(dir, name string, v any) error {
	return writeFile(dir, name, func(w io.Writer) error { return json.NewEncoder(w).Encode(v) })
}

// writeFile writes dir/name atomically: write fills a synced temporary
// file, which is renamed over the target.
func writeFile(dir, name string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer os.Remove(f.Name()) // fails harmlessly after the rename
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return fmt.Errorf("catalog: write %s: %w", name, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("catalog: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("catalog: sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("catalog: close %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}
