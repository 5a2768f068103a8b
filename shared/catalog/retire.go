package catalog

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
