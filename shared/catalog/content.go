package catalog

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// removedReadMax is how many removed tools' names Put reads item by item;
// past it, it queries the replaced version's partitions instead.
const removedReadMax = 16

// plan is what a Put writes over base, the version it replaces.
type plan struct {
	base    head      // base.version "" : none
	baseM   *manifest // base's manifest in the content layout, else nil
	m       manifest  // the new version's
	write   []int     // entries of p whose items this Put writes
	changes *Changes
	kept    bool // m references items of other versions
}

// writing is what one Put has written so far, across plans.
type writing struct {
	shards  int          // partitions of its items, fixed by its first plan
	written map[int]bool // entries whose items are written
	chunks  int          // manifest items written; 0: none yet
}

// keepShards reports whether a version of want partitions by size may
// keep its base's have, so that its tools' items stay shareable.
func keepShards(have, want int) bool { return have <= 2*want && want <= 2*have }

// plan reads h's version and diffs p against it: which of p's tools
// reference h's items and which are written. ok is false when h's version
// is being deleted. It first finishes a retirement h records as pending.
func (s *Dynamo) plan(ctx context.Context, id string, h head, p prepared, w *writing, now time.Time) (*plan, bool, error) {
	pl := &plan{base: h}
	if h.version == "" || h.expired(now) {
		// Expired unchecked: replaced, not diffed, nothing kept.
		pl.base = head{version: h.version, shards: h.shards, manifestChunks: h.manifestChunks}
		pl.changes = allAdded(p)
	} else {
		bm, ok, err := s.readManifest(ctx, id, h.version)
		if err != nil || !ok {
			return nil, ok, err
		}
		if len(bm.tools) != h.toolCount || len(bm.refused) != h.refusedCount {
			return nil, false, nil
		}
		pl.baseM = bm
		if h.retiring != "" && h.retiring != h.version {
			s.finishRetiring(ctx, id, h.retiring, bm.refs())
		}
	}
	if w.shards == 0 {
		w.shards = shardCount(id, p)
		if pl.baseM != nil && keepShards(h.shards, w.shards) {
			w.shards = h.shards
		}
	}
	pl.m.writers = []string{p.key}
	pl.m.refused = p.refused
	var (
		baseIdx  map[[nameKeyLen]byte]int
		matched  []bool
		writerIx = map[string]int{p.key: 0}
		canKeep  bool
		added    []string
		changed  []string
	)
	if bm := pl.baseM; bm != nil {
		baseIdx = make(map[[nameKeyLen]byte]int, len(bm.tools))
		for j, e := range bm.tools {
			baseIdx[e.name] = j
		}
		matched = make([]bool, len(bm.tools))
		// Kept items keep their expiry and partition: renew a version past
		// half its retention, or repartitioned, by writing every tool.
		canKeep = h.shards == w.shards && h.toolsExpire-now.Unix() >= int64(s.retention/2/time.Second)
	}
	pl.m.tools = make([]mentry, len(p.entries))
	for i, e := range p.entries {
		me := mentry{fields: e.fields, model: modelByte(e.tool), hints: hintsByte(e.tool.Annotations)}
		copy(me.name[:], e.hash[:nameKeyLen])
		j, inBase := baseIdx[me.name]
		if pl.baseM != nil {
			switch {
			case !inBase:
				added = append(added, e.tool.Name)
			case pl.baseM.tools[j].fields != me.fields:
				changed = append(changed, e.tool.Name)
			}
			if inBase {
				matched[j] = true
			}
		}
		switch {
		case w.written[i]:
		case canKeep && inBase && pl.baseM.tools[j].fields == me.fields && pl.baseM.tools[j].model == me.model:
			writer := pl.baseM.writers[pl.baseM.tools[j].writer]
			ix, ok := writerIx[writer]
			if !ok {
				ix = len(pl.m.writers)
				writerIx[writer] = ix
				pl.m.writers = append(pl.m.writers, writer)
			}
			me.writer, pl.kept = ix, true
		default:
			pl.write = append(pl.write, i)
		}
		pl.m.tools[i] = me
	}
	if pl.baseM != nil {
		var gone []ref
		for j, ok := range matched {
			if !ok {
				gone = append(gone, pl.baseM.ref(j))
			}
		}
		removed, err := s.itemNames(ctx, id, h.shards, gone)
		if err != nil {
			return nil, false, err
		}
		if len(removed) != len(gone) {
			return nil, false, nil // an item is gone: the version is being deleted
		}
		pl.changes = boundChanges(added, removed, changed)
	}
	return pl, true, nil
}

// itemNames reads the names of the tool items refs names, in partitions
// of shards: item by item when they are few, else a Query per partition.
// Items not found are left out.
func (s *Dynamo) itemNames(ctx context.Context, id string, shards int, refs []ref) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var (
		mu    sync.Mutex
		names []string
	)
	add := func(item map[string]types.AttributeValue) error {
		name, err := itemName(item)
		if err != nil {
			return fmt.Errorf("catalog: %q tool item %s: %w", id, stringAttr(item, SortKey), err)
		}
		mu.Lock()
		names = append(names, name)
		mu.Unlock()
		return nil
	}
	if len(refs) <= removedReadMax {
		err := parallel(ctx, len(refs), func(ctx context.Context, i int) error {
			item, err := s.getItem(ctx, contentPK(id, toolShard(refs[i].name[:], shards)), contentSortKey(refs[i]))
			if err != nil || item == nil {
				return err
			}
			return add(item)
		})
		return names, err
	}
	want := make(map[ref]bool, len(refs))
	for _, r := range refs {
		want[r] = true
	}
	err := parallel(ctx, shards, func(ctx context.Context, shard int) error {
		return s.queryAttrs(ctx, contentPK(id, shard), []string{PartitionKey, SortKey, attrName, attrZipped}, func(item map[string]types.AttributeValue) error {
			if r, ok := parseContentSortKey(stringAttr(item, SortKey)); ok && want[r] {
				return add(item)
			}
			return nil
		})
	})
	return names, err
}

// itemName is a tool item's name: its attribute, or inside z.
func itemName(item map[string]types.AttributeValue) (string, error) {
	if n, ok := item[attrName].(*types.AttributeValueMemberS); ok {
		return n.Value, nil
	}
	t, err := decodeToolFields(item)
	return t.Name, err
}

// writePlan writes the items of pl not yet written and the new version's
// manifest, marker last in no order that matters: nothing is visible
// before the flip.
func (s *Dynamo) writePlan(ctx context.Context, id string, p prepared, pl *plan, w *writing, expires int64) error {
	var todo []int
	for _, i := range pl.write {
		if !w.written[i] {
			todo = append(todo, i)
		}
	}
	parts := chunks(pl.m.encode(), s.chunkBytes)
	exp := &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)}
	item := func(i int) map[string]types.AttributeValue {
		if i < len(todo) {
			e := p.entries[todo[i]]
			r := ref{writer: p.key}
			copy(r.name[:], e.hash[:nameKeyLen])
			return toolItem(contentPK(id, toolShard(e.hash[:], w.shards)), contentSortKey(r), e, exp)
		}
		return manifestItem(id, p.key, i-len(todo), w.shards, parts, exp)
	}
	if err := s.putItems(ctx, len(todo)+len(parts), item); err != nil {
		return err
	}
	for _, i := range todo {
		w.written[i] = true
	}
	if w.chunks > len(parts) { // an earlier plan's manifest was longer
		var reqs []types.WriteRequest
		for n := len(parts); n < w.chunks; n++ {
			reqs = append(reqs, deleteRequest(id, chunkSortKey(p.key, n)))
		}
		if err := s.batchWrite(ctx, reqs); err != nil {
			return err
		}
	}
	w.chunks = len(parts)
	return nil
}

// toolsExpire is the expires_at of pl's oldest item: a kept item carries
// its base's.
func (pl *plan) toolsExpire(expires int64) int64 {
	if pl.kept && pl.base.toolsExpire != 0 {
		return min(pl.base.toolsExpire, expires)
	}
	return expires
}

// toolItem is e's tool item at pk and sk, expiring at exp.
func toolItem(pk, sk string, e entry, exp types.AttributeValue) map[string]types.AttributeValue {
	item := itemKey(pk, sk)
	item[TTLAttribute] = exp
	item[attrToolHash] = &types.AttributeValueMemberB{Value: e.toolHash[:]}
	if e.tool.ModelName != e.tool.Name {
		item[attrModelName] = &types.AttributeValueMemberS{Value: e.tool.ModelName}
	}
	if e.zipped != nil {
		item[attrZipped] = &types.AttributeValueMemberB{Value: e.zipped}
		return item
	}
	t := e.tool
	item[attrName] = &types.AttributeValueMemberS{Value: t.Name}
	item[attrSchema] = &types.AttributeValueMemberB{Value: t.InputSchema}
	optS := func(name, v string) {
		if v != "" {
			item[name] = &types.AttributeValueMemberS{Value: v}
		}
	}
	optB := func(name string, v []byte) {
		if len(v) > 0 {
			item[name] = &types.AttributeValueMemberB{Value: v}
		}
	}
	optS(attrDescription, t.Description)
	optS(attrTitle, t.Title)
	optB(attrOutputSchema, t.OutputSchema)
	optB(attrAnnotations, encodeAnnotations(t.Annotations))
	optB(attrMeta, t.Meta)
	return item
}

func deleteRequest(pk, sk string) types.WriteRequest {
	return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: itemKey(pk, sk)}}
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
	return tools, m.refused, found == len(m.tools), nil
}

// retire deletes pl's base after the flip, best effort: its items that
// the new version does not reference, then its chunks, then its marker,
// so that an interruption leaves the marker for the next Put, which
// finishes (finishRetiring); TTL is the backstop.
func (s *Dynamo) retire(ctx context.Context, id string, pl *plan) {
	switch {
	case pl.base.version == "":
	case pl.baseM != nil:
		_ = s.deleteManifest(ctx, id, pl.base.version, pl.base.shards, pl.base.manifestChunks, pl.baseM, pl.m.refs())
	default: // expired unchecked
		s.finishRetiring(ctx, id, pl.base.version, pl.m.refs())
	}
}

// deleteManifest deletes the items m references but keep does not, then
// version's chunks after the first of n, then its marker.
func (s *Dynamo) deleteManifest(ctx context.Context, id, version string, shards, n int, m *manifest, keep map[ref]bool) error {
	var reqs []types.WriteRequest
	for i := range m.tools {
		if r := m.ref(i); !keep[r] {
			reqs = append(reqs, deleteRequest(contentPK(id, toolShard(r.name[:], shards)), contentSortKey(r)))
		}
	}
	for c := 1; c < n; c++ {
		reqs = append(reqs, deleteRequest(id, chunkSortKey(version, c)))
	}
	if err := s.batchWrite(ctx, reqs); err != nil {
		return err
	}
	return s.batchWrite(ctx, []types.WriteRequest{deleteRequest(id, markerSortKey(version))})
}

// finishRetiring completes the retirement of version, which a flip
// replaced, if its marker is still there: it deletes the items keep (the
// current version's) does not reference. Best effort.
func (s *Dynamo) finishRetiring(ctx context.Context, id, version string, keep map[ref]bool) {
	marker, err := s.getItem(ctx, id, markerSortKey(version))
	if err != nil || marker == nil {
		return
	}
	shards, _ := strconv.Atoi(numberAttr(marker, attrShards))
	shards = max(shards, 1)
	if m, ok, err := s.manifestOf(ctx, id, version, marker); err == nil && ok {
		n, _ := strconv.Atoi(numberAttr(marker, attrChunks))
		_ = s.deleteManifest(ctx, id, version, shards, n, m, keep)
	}
}

// dropOwn deletes what a superseded Put wrote, best effort, but for the
// items h's version references: its flip may have landed unseen and a
// later version kept them.
func (s *Dynamo) dropOwn(ctx context.Context, id string, h head, p prepared, w *writing) {
	keep := map[ref]bool{}
	if h.manifestChunks > 0 {
		m, ok, err := s.readManifest(ctx, id, h.version)
		if err != nil || !ok {
			return // unknown: TTL removes what is garbage
		}
		keep = m.refs()
	}
	var reqs []types.WriteRequest
	for i := range w.written {
		r := ref{writer: p.key}
		copy(r.name[:], p.entries[i].hash[:nameKeyLen])
		if !keep[r] {
			reqs = append(reqs, deleteRequest(contentPK(id, toolShard(p.entries[i].hash[:], w.shards)), contentSortKey(r)))
		}
	}
	for n := 1; n < w.chunks; n++ {
		reqs = append(reqs, deleteRequest(id, chunkSortKey(p.key, n)))
	}
	if s.batchWrite(ctx, reqs) == nil {
		_ = s.batchWrite(ctx, []types.WriteRequest{deleteRequest(id, markerSortKey(p.key))})
	}
}

// renewContent re-puts h's version as it is, p being its listing, with a
// new expiry: every item it references and its manifest.
func (s *Dynamo) renewContent(ctx context.Context, id string, h head, p prepared, expires int64) (bool, error) {
	m, ok, err := s.readManifest(ctx, id, h.version)
	if err != nil || !ok || len(m.tools) != len(p.entries) {
		return false, err
	}
	for i, e := range p.entries {
		if string(m.tools[i].name[:]) != string(e.hash[:nameKeyLen]) {
			return false, nil // not this listing's version: read the head again
		}
	}
	parts := chunks(m.encode(), s.chunkBytes)
	exp := &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)}
	err = s.putItems(ctx, len(m.tools)+len(parts), func(i int) map[string]types.AttributeValue {
		if i < len(m.tools) {
			e := p.entries[i]
			return toolItem(contentPK(id, toolShard(e.hash[:], h.shards)), contentSortKey(m.ref(i)), e, exp)
		}
		return manifestItem(id, h.version, i-len(m.tools), h.shards, parts, exp)
	})
	return err == nil, err
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

// manifestItem is part n of version's manifest: the marker (n 0, which
// also records the shards and the number of parts) or chunk n.
func manifestItem(id, version string, n, shards int, parts [][]byte, exp types.AttributeValue) map[string]types.AttributeValue {
	sk := chunkSortKey(version, n)
	if n == 0 {
		sk = markerSortKey(version)
	}
	it := itemKey(id, sk)
	it[attrManifest] = &types.AttributeValueMemberB{Value: parts[n]}
	it[TTLAttribute] = exp
	if n == 0 {
		it[attrShards] = &types.AttributeValueMemberN{Value: strconv.Itoa(shards)}
		it[attrChunks] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(parts))}
	}
	return it
}
