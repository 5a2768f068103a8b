package catalog

import (
	"context"
	"fmt"
)

// WithModelExceptionMax sets how many model-name exceptions the head
// records before Put reads the replaced version's items instead.
func WithModelExceptionMax(n int) DynamoOption { return func(s *Dynamo) { s.exceptionMax = n } }

// WithManifestChunkBytes sets the manifest bytes one item carries.
func WithManifestChunkBytes(n int) DynamoOption { return func(s *Dynamo) { s.chunkBytes = n } }

// OldChanges is c framed as versions stored before the changes map did.
func OldChanges(c *Changes) []byte { return encodeChanges(c) }

// LiveKeys returns the keys, as "pk sk", of every item the current
// version of id needs: the head, the version's marker and manifest chunks,
// and the tool items its manifest references.
func LiveKeys(ctx context.Context, s *Dynamo, id string) (map[string]bool, error) {
	h, err := s.head(ctx, id)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{id + " " + HeadSortKey: true}
	if h.version == "" {
		return keys, nil
	}
	m, ok, err := s.readManifest(ctx, id, h.version)
	if err != nil || !ok {
		return nil, fmt.Errorf("manifest of %s: found %t, %v", h.version, ok, err)
	}
	keys[id+" "+markerSortKey(h.version)] = true
	for c := 1; c < h.manifestChunks; c++ {
		keys[id+" "+chunkSortKey(h.version, c)] = true
	}
	for i := range m.tools {
		r := m.ref(i)
		keys[contentPK(id, toolShard(r.name[:], h.shards))+" "+contentSortKey(r)] = true
	}
	return keys, nil
}
