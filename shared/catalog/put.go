package catalog

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Put records d as the catalog of id and swaps it in atomically: a new
// version's tool items are written first, then one conditional head update
// makes it current, so readers see the old version or the new one, never a
// mix. Of racing Puts the later-started wins; the loser reports Superseded.
// On any failure the last good version stays current (docs/catalog.md).
// Model names are assigned, and the diff taken, against the version the
// head names when Put reads it; the flip records the diff with the version.
func (s *Dynamo) Put(ctx context.Context, id string, d Discovery) (PutResult, error) {
	if err := ValidateID(id); err != nil {
		return PutResult{}, err
	}
	now := s.now()
	if d.StartedAt.IsZero() {
		d.StartedAt = now
	}
	url, err := s.sealURL(ctx, id, d.Schedule)
	if err != nil {
		return PutResult{}, err
	}
	p := prepare(id, d)
	p.url = url
	h, err := s.head(ctx, id)
	if err != nil {
		return PutResult{}, err
	}
	pr, err := s.prior(ctx, id, h, now)
	if err != nil {
		return PutResult{}, err
	}
	if err := p.finish(pr); err != nil {
		return PutResult{}, err
	}
	res := PutResult{ToolCount: len(p.entries), Refused: p.refused}
	expires := now.Add(s.retention).Unix()
	w := &writing{written: map[int]bool{}}
	var pl *plan // against the version the flip replaces
	for range maxRounds {
		switch {
		case h.latest > p.key:
			if w.chunks > 0 {
				s.dropOwn(ctx, id, h, p, w)
			}
			res.Version, res.Superseded = h.version, true
			return res, nil
		case w.chunks == 0 && h.version != "" && h.hash == p.hash && !h.expired(now):
			ok, err := s.confirm(ctx, id, h, p, now)
			if err != nil {
				return PutResult{}, err
			}
			if ok {
				res.Version, res.Unchanged = h.version, true
				return res, nil
			}
		default:
			if pl == nil || pl.base.version != h.version {
				np, ok, err := s.plan(ctx, id, h, p, w, now)
				if err != nil {
					return PutResult{}, err
				}
				if !ok {
					break // h's version is being deleted: read the head again
				}
				pl = np
				if err := s.writePlan(ctx, id, p, pl, w, expires); err != nil {
					return PutResult{}, err
				}
			}
			ok, err := s.flip(ctx, id, h, p, pl, w, expires)
			if err != nil {
				return PutResult{}, err
			}
			if ok {
				s.retire(ctx, id, pl)
				res.Version, res.Changes = p.key, pl.changes
				return res, nil
			}
		}
		var err error
		if h, err = s.head(ctx, id); err != nil {
			return PutResult{}, err
		}
		if w.chunks > 0 && h.version == p.key { // our flip landed; its answer was lost
			s.retire(ctx, id, pl)
			res.Version, res.Changes = p.key, pl.changes
			return res, nil
		}
	}
	return PutResult{}, fmt.Errorf("%w: catalog %q changed %d times during one put", ErrUnavailable, id, maxRounds)
}

// prior is what Put needs of h's version to assign model names: the
// head's exceptions, and for a name two tools want, the name index. A
// version without an index, or whose exceptions did not fit the head, is
// read once, and only when it is needed (docs/catalog.md).
func (s *Dynamo) prior(ctx context.Context, id string, h head, now time.Time) (prior, error) {
	if h.version == "" || h.expired(now) {
		return prior{}, nil
	}
	var models map[string]string
	load := func() error {
		if models != nil {
			return nil
		}
		tools, _, _, err := s.readVersion(ctx, id, h)
		if err != nil {
			return err
		}
		models = make(map[string]string, len(tools))
		for _, t := range tools {
			models[t.Name] = t.ModelName
		}
		return nil
	}
	if h.modelsInItems {
		if err := load(); err != nil {
			return prior{}, err
		}
		return priorOf(models), nil
	}
	exc, err := decodeModelExceptions(h.exceptions)
	if err != nil {
		return prior{}, err
	}
	pr := prior{exceptions: exc}
	if h.nameIndexStored {
		pr.kept = func(name string) (bool, error) { return indexContains(h.nameIndex, name), nil }
	} else {
		pr.kept = func(name string) (bool, error) {
			if err := load(); err != nil {
				return false, err
			}
			_, ok := models[name]
			return ok, nil
		}
	}
	return pr, nil
}

// shardCount is how many partitions p's items take.
func shardCount(id string, p prepared) int {
	total := 0
	for _, e := range p.entries {
		total += e.size
	}
	for _, r := range p.refused {
		total += refusalItemSize(id, r)
	}
	return min(max(1, (total+shardBytes-1)/shardBytes), maxShards)
}

// confirm records an unchanged check with one conditional write; when the
// version's TTL is past half its retention it first renews the items.
func (s *Dynamo) confirm(ctx context.Context, id string, h head, p prepared, now time.Time) (bool, error) {
	var e expr
	set := []string{
		e.n(attrLatest) + " = " + e.s("k", p.key),
		e.n(attrCheckedAt) + " = " + e.s("t", formatTime(p.started)),
		e.n(attrProtocol) + " = " + e.s("pv", p.d.ProtocolVersion),
		e.n(attrServerName) + " = " + e.s("sn", p.d.ServerName),
		e.n(attrServerVersion) + " = " + e.s("sv", p.d.ServerVersion),
	}
	if h.toolsExpire-now.Unix() < int64(s.retention/2/time.Second) {
		expires := now.Add(s.retention).Unix()
		if ok, err := s.renewContent(ctx, id, h, p, expires); !ok || err != nil {
			return false, err
		}
		set = append(set, e.n(attrToolsExpire)+" = "+e.num("exp", expires))
	}
	set, remove := e.discovery(p.d, set, nil)
	set, remove = e.schedule(id, p.d.Schedule, p.url, h, p.started, set, remove)
	cond := e.n(attrVersion) + " = " + e.s("v", h.version) +
		" AND (attribute_not_exists(" + e.n(attrLatest) + ") OR " + e.n(attrLatest) + " <= :k)"
	return s.updateHead(ctx, id, updateExpr(set, remove), cond, e)
}

// flip points the head at p's version as pl plans it over h's, with its
// diff, if no later discovery is recorded and the head still holds the
// version Put read. It records h's version as the one to retire.
func (s *Dynamo) flip(ctx context.Context, id string, h head, p prepared, pl *plan, w *writing, expires int64) (bool, error) {
	var e expr
	t := formatTime(p.started)
	set := []string{
		e.n(attrVersion) + " = " + e.s("k", p.key),
		e.n(attrLatest) + " = :k",
		e.n(attrHash) + " = " + e.s("h", p.hash),
		e.n(attrProtocol) + " = " + e.s("pv", p.d.ProtocolVersion),
		e.n(attrServerName) + " = " + e.s("sn", p.d.ServerName),
		e.n(attrServerVersion) + " = " + e.s("sv", p.d.ServerVersion),
		e.n(attrDiscoveredAt) + " = " + e.s("t", t),
		e.n(attrCheckedAt) + " = :t",
		e.n(attrToolCount) + " = " + e.num("tc", int64(len(p.entries))),
		e.n(attrRefusedCount) + " = " + e.num("rc", int64(len(p.refused))),
		e.n(attrToolsExpire) + " = " + e.num("exp", pl.toolsExpire(expires)),
		e.n(attrShards) + " = " + e.num("shards", int64(w.shards)),
		e.n(attrChanges) + " = " + e.b("ch", encodeChanges(pl.changes)),
		e.n(attrManifestChunks) + " = " + e.num("mc", int64(w.chunks)),
	}
	var remove []string
	if len(p.entries) <= s.nameIndexMax {
		set = append(set, e.n(attrNameIndex)+" = "+e.b("ix", nameIndex(p.entries)),
			e.n(attrNameHints)+" = "+e.b("nh", nameHints(p.entries)))
	} else {
		remove = append(remove, e.n(attrNameIndex), e.n(attrNameHints))
	}
	if h.version != "" {
		set = append(set, e.n(attrRetiring)+" = "+e.s("rt", h.version))
	} else {
		remove = append(remove, e.n(attrRetiring))
	}
	switch exc, ok := modelExceptions(p.entries, s.exceptionMax); {
	case !ok:
		set = append(set, e.n(attrModelsInItems)+" = "+e.v("mi", &types.AttributeValueMemberBOOL{Value: true}))
		remove = append(remove, e.n(attrModelExceptions))
	case len(exc) > 0:
		set = append(set, e.n(attrModelExceptions)+" = "+e.b("mx", exc))
		remove = append(remove, e.n(attrModelsInItems))
	default:
		remove = append(remove, e.n(attrModelExceptions), e.n(attrModelsInItems))
	}
	set, remove = e.discovery(p.d, set, remove)
	set, remove = e.schedule(id, p.d.Schedule, p.url, h, p.started, set, remove)
	cond := "(attribute_not_exists(" + e.n(attrLatest) + ") OR " + e.n(attrLatest) + " < :k) AND "
	if h.version == "" {
		cond += "attribute_not_exists(" + e.n(attrVersion) + ")"
	} else {
		cond += e.n(attrVersion) + " = " + e.s("old", h.version)
	}
	return s.updateHead(ctx, id, updateExpr(set, remove), cond, e)
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
