package catalog

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Get returns the current catalog of id: always one whole version, the one
// the head named when the read began or a later one. A version retired
// while it is being read is read again from the new head, so a reader
// never sees tools of two versions, nor a version half-written.
func (s *Dynamo) Get(ctx context.Context, id string) (*Catalog, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	for range maxRounds {
		h, err := s.head(ctx, id)
		if err != nil {
			return nil, err
		}
		if !h.exists {
			return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		c := h.catalog(id)
		if h.version == "" {
			return c, nil
		}
		if h.expired(s.now()) {
			return nil, fmt.Errorf("%w: %q: version %s expired unchecked", ErrNotFound, id, h.version)
		}
		if h.changes != nil {
			if c.Changes, err = decodeStoredChanges(h.changes); err != nil {
				return nil, fmt.Errorf("catalog: %q version %s: %w", id, h.version, err)
			}
			c.ChangedAt = h.discoveredAt
		}
		tools, refused, whole, err := s.readVersion(ctx, id, h)
		if err != nil {
			return nil, err
		}
		if !whole || len(tools) != h.toolCount || len(refused) != h.refusedCount {
			if err := s.missing(ctx, id, h, tools, refused); err != nil {
				return nil, err
			}
			continue // the version was replaced and is being deleted
		}
		c.Tools, c.Refused = tools, refused
		return c, nil
	}
	return nil, fmt.Errorf("%w: catalog %q changed %d times during one read", ErrUnavailable, id, maxRounds)
}

// Lookup reports whether toolName is a tool's model name or name in the
// current version of id; a model name wins. A name is one consistent
// GetItem of the head when it carries the name index, otherwise a second
// GetItem of the tool's item; a string shaped like a mapped model name
// also costs a Query (docs/catalog.md).
func (s *Dynamo) Lookup(ctx context.Context, id, toolName string) (Membership, error) {
	if err := ValidateID(id); err != nil {
		return Membership{}, err
	}
	for range maxRounds {
		h, err := s.head(ctx, id)
		if err != nil {
			return Membership{}, err
		}
		if !h.exists {
			return Membership{}, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		m := Membership{Version: h.version, ProtocolVersion: h.protocol, ServerDiscovery: h.discovery}
		if h.version == "" {
			return m, nil
		}
		if h.expired(s.now()) {
			return Membership{}, fmt.Errorf("%w: %q: version %s expired unchecked", ErrNotFound, id, h.version)
		}
		found, sure, err := s.lookupContent(ctx, id, h, toolName)
		if err != nil {
			return Membership{}, err
		}
		m.Found, m.Name, m.Annotations = found.Found, found.Name, found.Annotations
		m.Quarantined, m.QuarantineReason = h.quarantined(m, toolName)
		if sure {
			return m, nil
		}
		again, err := s.head(ctx, id) // the version may have been deleted while read
		if err != nil {
			return Membership{}, err
		}
		if again.version == h.version {
			return m, nil
		}
	}
	return Membership{}, fmt.Errorf("%w: catalog %q changed %d times during one lookup", ErrUnavailable, id, maxRounds)
}

// StoredVersions lists the versions with a marker under id, sorted: the
// current one and any whose deletion is pending or was interrupted.
func (s *Dynamo) StoredVersions(ctx context.Context, id string) ([]string, error) {
	var versions []string
	err := s.queryPrefix(ctx, id, "v#", func(item map[string]types.AttributeValue) error {
		versions = append(versions, strings.TrimPrefix(stringAttr(item, SortKey), "v#"))
		return nil
	})
	return versions, err
}

// readVersion reads h's version in the content layout: its manifest, then
// every partition in parallel, keeping the items the manifest names. ok
// is false when one is missing: the version is being deleted.
func (s *Dynamo) readVersion(ctx context.Context, id string, h head) ([]mcp.Tool, []mcp.Refusal, bool, error) {
	m, ok, err := s.readManifest(ctx, id, h.version)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	pos := make(map[ref]int, len(m.tools))
	for i := range m.tools {
		pos[m.ref(i)] = i
	}
	var (
		mu    sync.Mutex
		tools = make([]mcp.Tool, len(m.tools))
		have  = make([]bool, len(m.tools))
		found int
	)
	err = parallel(ctx, h.shards, func(ctx context.Context, shard int) error {
		return s.query(ctx, contentPK(id, shard), false, func(item map[string]types.AttributeValue) error {
			r, ok := parseContentSortKey(stringAttr(item, SortKey))
			i, mine := pos[r]
			if !ok || !mine {
				return nil // another version's, or garbage
			}
			t, err := decodeToolItem(item)
			if err != nil {
				return fmt.Errorf("catalog: %q version %s item %s: %w", id, h.version, stringAttr(item, SortKey), err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !have[i] {
				tools[i], have[i] = t, true
				found++
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, false, err
	}
	if found < len(m.tools) { // what was found, so that missing can say how much is not
		got := tools[:0]
		for i, t := range tools {
			if have[i] {
				got = append(got, t)
			}
		}
		tools = got
	}
	return tools, m.refused, found == len(m.tools), nil
}

// readManifest reads version's manifest: its marker, then its further
// chunks with one Query. ok is false when the marker or a chunk is gone
// (the version is being deleted).
func (s *Dynamo) readManifest(ctx context.Context, id, version string) (*manifest, bool, error) {
	marker, err := s.getItem(ctx, id, markerSortKey(version))
	if err != nil || marker == nil {
		return nil, false, err
	}
	m, ok, err := s.manifestOf(ctx, id, version, marker)
	return m, ok, err
}

// manifestOf decodes the manifest whose marker is marker.
func (s *Dynamo) manifestOf(ctx context.Context, id, version string, marker map[string]types.AttributeValue) (*manifest, bool, error) {
	b := binaryAttr(marker, attrManifest)
	n, _ := strconv.Atoi(numberAttr(marker, attrChunks))
	if n > 1 {
		b = append([]byte(nil), b...)
		got := 1
		err := s.queryPrefix(ctx, id, "m#"+version+"#", func(item map[string]types.AttributeValue) error {
			if got < n && stringAttr(item, SortKey) == chunkSortKey(version, got) {
				b = append(b, binaryAttr(item, attrManifest)...)
				got++
			}
			return nil
		})
		if err != nil || got != n {
			return nil, false, err
		}
	}
	m, err := decodeManifest(b)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: %q version %s: %w", id, version, err)
	}
	return m, true, nil
}

// lookupContent answers Lookup in h's version in the content layout: from
// the head's name index, hints and model-name exceptions when it has
// them, else from the manifest; a string shaped like a mapped model name
// also costs a Query of the partition its digits select. sure is false
// when an absence was seen in items that may have been deleted.
func (s *Dynamo) lookupContent(ctx context.Context, id string, h head, toolName string) (m Membership, sure bool, err error) {
	fast := h.nameIndexStored && !h.modelsInItems
	var man *manifest
	load := func() (bool, error) {
		if man != nil {
			return true, nil
		}
		mm, ok, err := s.readManifest(ctx, id, h.version)
		man = mm
		return ok, err
	}
	// current returns whether name is in the version, its model name and
	// hints there.
	current := func(name string) (bool, string, *mcp.Annotations, error) {
		if fast {
			pos, ok := indexFind(h.nameIndex, name)
			if !ok {
				return false, "", nil, nil
			}
			var hints *mcp.Annotations
			if pos < len(h.nameHints) {
				hints = hintsOf(h.nameHints[pos])
			}
			model := defaultModelName(name)
			if len(h.exceptions) > 0 {
				exc, err := decodeModelExceptions(h.exceptions)
				if err != nil {
					return false, "", nil, err
				}
				if d, ok := exc[nameKey(name)]; ok {
					model = mappedName(name, d)
				}
			}
			return true, model, hints, nil
		}
		if ok, err := load(); err != nil || !ok {
			return false, "", nil, err
		}
		nh := sha256Of(name)
		for _, e := range man.tools {
			if string(e.name[:]) == string(nh[:nameKeyLen]) {
				return true, modelOf(name, e.model), hintsOf(e.hints), nil
			}
		}
		return false, "", nil, nil
	}
	sure = true
	if digits := mappedDigits(toolName); digits != "" {
		prefix := digits[:min(len(digits), 2*nameKeyLen)]
		lead, _ := hex.DecodeString(digits[:4]) // mappedDigits checked the hex
		seen := false
		var names []string
		err := s.queryPrefix(ctx, contentPK(id, toolShard(lead, h.shards)), "t#"+prefix, func(item map[string]types.AttributeValue) error {
			seen = true
			name, err := itemName(item)
			if err != nil {
				return fmt.Errorf("catalog: %q tool %q: %w", id, toolName, err)
			}
			names = append(names, name)
			return nil
		})
		if err != nil {
			return m, false, err
		}
		for _, name := range names {
			in, model, hints, err := current(name)
			if err != nil {
				return m, false, err
			}
			if in && model == toolName {
				m.Found, m.Annotations = true, hints
				if name != toolName {
					m.Name = name
				}
				return m, true, nil
			}
		}
		sure = seen
	}
	in, _, hints, err := current(toolName)
	if err != nil {
		return m, false, err
	}
	if !fast && man == nil {
		sure = false // the manifest was gone
	}
	m.Found, m.Annotations = in, hints
	return m, sure, nil
}
