package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	// quarantine is the new version's, over base (quarantineOf).
	quarantine map[string]quarantineItem
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
	pl, ok, err := s.planBase(ctx, id, h, p, now)
	if err != nil || !ok {
		return nil, ok, err
	}
	if w.shards == 0 {
		w.shards = shardCount(id, p)
		if pl.baseM != nil && keepShards(h.shards, w.shards) {
			w.shards = h.shards
		}
	}
	// Kept items keep their expiry and partition: renew a version past
	// half its retention, or repartitioned, by writing every tool.
	canKeep := pl.baseM != nil && h.shards == w.shards && h.toolsExpire-now.Unix() >= int64(s.retention/2/time.Second)
	d := pl.build(p, w, canKeep)
	if pl.baseM == nil {
		return pl, true, nil
	}
	removed, err := s.itemNames(ctx, id, h.shards, d.gone)
	if err != nil {
		return nil, false, err
	}
	if len(removed) != len(d.gone) {
		return nil, false, nil // an item is gone: the version is being deleted
	}
	pl.changes = boundChanges(d.added, removed, d.changed)
	pl.quarantine, err = s.quarantineOf(ctx, id, h, p, pl, d)
	if errors.Is(err, errVersionGone) {
		return nil, false, nil
	}
	return pl, err == nil, err
}

// planBase starts a plan over h's version: its manifest, read and checked
// against the head's counts (ok false when it is being deleted), or none
// for a new catalog or one expired unchecked, which is replaced, not
// diffed, and keeps nothing. It finishes a retirement h records as
// pending.
func (s *Dynamo) planBase(ctx context.Context, id string, h head, p prepared, now time.Time) (*plan, bool, error) {
	if h.version == "" || h.expired(now) {
		base := head{version: h.version, shards: h.shards, manifestChunks: h.manifestChunks}
		return &plan{base: base, changes: allAdded(p)}, true, nil
	}
	bm, ok, err := s.readManifest(ctx, id, h.version)
	if err != nil || !ok {
		return nil, ok, err
	}
	if len(bm.tools) != h.toolCount || len(bm.refused) != h.refusedCount {
		return nil, false, nil
	}
	if h.retiring != "" && h.retiring != h.version {
		s.finishRetiring(ctx, id, h.retiring, bm.refs())
	}
	return &plan{base: h, baseM: bm}, true, nil
}

// baseDiff is p's diff against a plan's base by name hash; the removed
// tools are refs whose names are still to be read.
type baseDiff struct {
	added, changed []string
	gone           []ref
	addedAt        []int    // entries of p that base lacks
	changedAt      [][2]int // entries of p and base whose fields differ
}

// build fills pl's manifest with p's tools: a tool whose fields and model
// byte equal its base entry's keeps that item when canKeep; every other
// tool not yet in w is written.
func (pl *plan) build(p prepared, w *writing, canKeep bool) (d baseDiff) {
	pl.m.writers = []string{p.key}
	pl.m.refused = p.refused
	bm := pl.baseM
	var (
		baseIdx  map[[nameKeyLen]byte]int
		matched  []bool
		writerIx = map[string]int{p.key: 0}
	)
	if bm != nil {
		baseIdx = make(map[[nameKeyLen]byte]int, len(bm.tools))
		for j, e := range bm.tools {
			baseIdx[e.name] = j
		}
		matched = make([]bool, len(bm.tools))
	}
	pl.m.tools = make([]mentry, len(p.entries))
	for i, e := range p.entries {
		me := mentry{fields: e.fields, model: modelByte(e.tool), hints: hintsByte(e.tool.Annotations)}
		copy(me.name[:], e.hash[:nameKeyLen])
		j, inBase := baseIdx[me.name]
		switch {
		case inBase:
			matched[j] = true
			if bm.tools[j].fields != me.fields {
				d.changed = append(d.changed, e.tool.Name)
				d.changedAt = append(d.changedAt, [2]int{i, j})
			}
		case bm != nil:
			d.added = append(d.added, e.tool.Name)
			d.addedAt = append(d.addedAt, i)
		}
		switch {
		case w.written[i]:
		case canKeep && inBase && bm.tools[j].fields == me.fields && bm.tools[j].model == me.model:
			me.writer = pl.writerOf(bm.writers[bm.tools[j].writer], writerIx)
		default:
			pl.write = append(pl.write, i)
		}
		pl.m.tools[i] = me
	}
	for j, ok := range matched {
		if !ok {
			d.gone = append(d.gone, bm.ref(j))
		}
	}
	return d
}

// writerOf is writer's index among the new manifest's writers, added when
// new: a tool keeps an item writer wrote.
func (pl *plan) writerOf(writer string, ix map[string]int) int {
	i, ok := ix[writer]
	if !ok {
		i = len(pl.m.writers)
		ix[writer] = i
		pl.m.writers = append(pl.m.writers, writer)
	}
	pl.kept = true
	return i
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
