package catalog

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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
	now := s.now()
	p, h, err := s.start(ctx, id, d, now)
	if err != nil {
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
				if onChange(h, d) == OnChangeQuarantine {
					res.Quarantined = quarantineList(h.quarantine)
				}
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
				res.Version, res.Changes, res.Quarantined = p.key, pl.changes, quarantineList(pl.quarantine)
				return res, nil
			}
		}
		if h, err = s.head(ctx, id); err != nil {
			return PutResult{}, err
		}
		if w.chunks > 0 && h.version == p.key { // our flip landed; its answer was lost
			s.retire(ctx, id, pl)
			res.Version, res.Changes, res.Quarantined = p.key, pl.changes, quarantineList(pl.quarantine)
			return res, nil
		}
	}
	return PutResult{}, fmt.Errorf("%w: catalog %q changed %d times during one put", ErrUnavailable, id, maxRounds)
}

// start prepares d for id as of now, against the head it reads: the
// server URL sealed, model names assigned.
func (s *Dynamo) start(ctx context.Context, id string, d Discovery, now time.Time) (prepared, head, error) {
	if err := ValidateID(id); err != nil {
		return prepared{}, head{}, err
	}
	if err := ValidateOnChange(d.OnChange); err != nil {
		return prepared{}, head{}, err
	}
	if d.StartedAt.IsZero() {
		d.StartedAt = now
	}
	url, err := s.sealURL(ctx, id, d.Schedule)
	if err != nil {
		return prepared{}, head{}, err
	}
	p := prepare(id, d)
	p.url = url
	h, err := s.head(ctx, id)
	if err != nil {
		return prepared{}, head{}, err
	}
	pr, err := s.prior(ctx, id, h, now)
	if err != nil {
		return prepared{}, head{}, err
	}
	return p, h, p.finish(pr)
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
	u := expression.Set(name(attrLatest), str(p.key)).
		Set(name(attrCheckedAt), str(formatTime(p.started))).
		Set(name(attrProtocol), str(p.d.ProtocolVersion)).
		Set(name(attrServerName), str(p.d.ServerName)).
		Set(name(attrServerVersion), str(p.d.ServerVersion))
	if h.toolsExpire-now.Unix() < int64(s.retention/2/time.Second) {
		expires := now.Add(s.retention).Unix()
		if ok, err := s.renewContent(ctx, id, h, p, expires); !ok || err != nil {
			return false, err
		}
		u = u.Set(name(attrToolsExpire), num(expires))
	}
	if p.d.OnChange != "" {
		u = u.Set(name(attrOnChange), str(p.d.OnChange))
	}
	if onChange(h, p.d) != OnChangeQuarantine {
		u = u.Remove(name(attrQuarantine))
	}
	if p.d.SchemaRules != "" { // the same listing, judged again or skipped by that record
		var err error
		if u, err = setJudged(u, p.d.SchemaRules, h.version); err != nil {
			return false, err
		}
	}
	u = schedule(discovery(u, p.d), id, p.d.Schedule, p.url, h, p.started)
	cond := name(attrVersion).Equal(str(h.version)).
		And(expression.AttributeNotExists(name(attrLatest)).Or(name(attrLatest).LessThanEqual(str(p.key))))
	return s.updateHead(ctx, id, u, cond)
}

// flip points the head at p's version as pl plans it over h's, with its
// diff, if no later discovery is recorded and the head still holds the
// version Put read. It records h's version as the one to retire.
func (s *Dynamo) flip(ctx context.Context, id string, h head, p prepared, pl *plan, w *writing, expires int64) (bool, error) {
	t := formatTime(p.started)
	changes, err := attributevalue.Marshal(pl.changes)
	if err != nil {
		return false, fmt.Errorf("catalog: changes: %w", err)
	}
	u := expression.Set(name(attrVersion), str(p.key)).
		Set(name(attrLatest), str(p.key)).
		Set(name(attrHash), str(p.hash)).
		Set(name(attrProtocol), str(p.d.ProtocolVersion)).
		Set(name(attrServerName), str(p.d.ServerName)).
		Set(name(attrServerVersion), str(p.d.ServerVersion)).
		Set(name(attrDiscoveredAt), str(t)).
		Set(name(attrCheckedAt), str(t)).
		Set(name(attrToolCount), num(int64(len(p.entries)))).
		Set(name(attrRefusedCount), num(int64(len(p.refused)))).
		Set(name(attrToolsExpire), num(pl.toolsExpire(expires))).
		Set(name(attrShards), num(int64(w.shards))).
		Set(name(attrChanges), expression.Value(changes)).
		Set(name(attrManifestChunks), num(int64(w.chunks)))
	if len(p.entries) <= s.nameIndexMax {
		u = u.Set(name(attrNameIndex), bin(nameIndex(p.entries))).Set(name(attrNameHints), bin(nameHints(p.entries)))
	} else {
		u = u.Remove(name(attrNameIndex)).Remove(name(attrNameHints))
	}
	if h.version != "" {
		u = u.Set(name(attrRetiring), str(h.version))
	} else {
		u = u.Remove(name(attrRetiring))
	}
	switch exc, ok := modelExceptions(p.entries, s.exceptionMax); {
	case !ok:
		u = u.Set(name(attrModelsInItems), expression.Value(&types.AttributeValueMemberBOOL{Value: true})).Remove(name(attrModelExceptions))
	case len(exc) > 0:
		u = u.Set(name(attrModelExceptions), bin(exc)).Remove(name(attrModelsInItems))
	default:
		u = u.Remove(name(attrModelExceptions)).Remove(name(attrModelsInItems))
	}
	if mode := onChange(h, p.d); mode != "" {
		u = u.Set(name(attrOnChange), str(mode))
	}
	if u, err = setJudged(u, p.d.SchemaRules, p.key); err != nil {
		return false, err
	}
	if u, err = setQuarantine(u, pl.quarantine); err != nil {
		return false, err
	}
	u = schedule(discovery(u, p.d), id, p.d.Schedule, p.url, h, p.started)
	cond := expression.AttributeNotExists(name(attrLatest)).Or(name(attrLatest).LessThan(str(p.key)))
	if h.version == "" {
		cond = cond.And(expression.AttributeNotExists(name(attrVersion)))
	} else {
		cond = cond.And(name(attrVersion).Equal(str(h.version)))
	}
	return s.updateHead(ctx, id, u, cond)
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
