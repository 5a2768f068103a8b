package catalog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/text"
)

// DynamoAPI is the part of *dynamodb.Client a Dynamo store uses.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Attributes besides the keys (docs/catalog.md).
const (
	attrVersion       = "version"
	attrLatest        = "latest"
	attrHash          = "content_hash"
	attrProtocol      = "protocol_version"
	attrServerName    = "server_name"
	attrServerVersion = "server_version"
	attrDiscovery     = "server_discovery"
	attrDiscoveredAt  = "discovered_at"
	attrCheckedAt     = "checked_at"
	attrToolCount     = "tool_count"
	attrRefusedCount  = "refused_count"
	attrToolsExpire   = "tools_expire_at"
	attrShards        = "shards"
	attrNameIndex     = "name_index"
	attrFailure       = "last_failure"
	attrErrorType     = "error_type"
	attrMessage       = "message"
	attrAt            = "at"

	attrSeq         = "seq"
	attrName        = "name"
	attrDescription = "description"
	attrSchema      = "input_schema"
	attrZipped      = "z"
	attrReason      = "reason"

	attrTitle        = "title"
	attrOutputSchema = "output_schema"
	attrAnnotations  = "annotations"
	attrMeta         = "meta"
	attrModelName    = "model_name"
	attrToolHash     = "tool_hash"
	attrChanges      = "changes"

	attrModelExceptions = "model_name_exceptions"
	attrModelsInItems   = "model_names_in_items"

	attrManifest       = "manifest"
	attrChunks         = "chunks"
	attrManifestChunks = "manifest_chunks"
	attrNameHints      = "name_hints"
	attrRetiring       = "retiring"
)

// Defaults of a Dynamo store.
const (
	DefaultRetention    = 365 * 24 * time.Hour
	DefaultBackoffMin   = 20 * time.Millisecond
	DefaultBackoffMax   = time.Second
	DefaultNameIndexMax = 16384
)

// maxRounds bounds the conditional writes one call makes while other
// writers keep changing the head.
const maxRounds = 32

// A version's items are spread over partitions of about shardBytes each,
// so one Query page reads a partition, and at most maxShards of them.
const (
	shardBytes = 768 << 10
	maxShards  = 64
)

// Dynamo is a Store in one DynamoDB table laid out as docs/catalog.md
// describes. It is safe for concurrent use.
type Dynamo struct {
	api          DynamoAPI
	table        string
	retention    time.Duration
	now          func() time.Time
	backoffMin   time.Duration
	backoffMax   time.Duration
	nameIndexMax int
	exceptionMax int
	chunkBytes   int // manifest bytes per item
	sealer       Sealer
}

// DynamoOption configures a Dynamo store.
type DynamoOption func(*Dynamo)

// WithRetention sets how long a version's items live without a check:
// each carries TTLAttribute at write time + d, renewed by a check after half
// of d. Default DefaultRetention.
func WithRetention(d time.Duration) DynamoOption { return func(s *Dynamo) { s.retention = d } }

// WithClock sets the clock. Default time.Now.
func WithClock(now func() time.Time) DynamoOption { return func(s *Dynamo) { s.now = now } }

// WithBackoff sets the jittered exponential backoff between retries of
// throttled, dropped or unprocessed requests. Default DefaultBackoffMin,
// DefaultBackoffMax.
func WithBackoff(lo, hi time.Duration) DynamoOption {
	return func(s *Dynamo) { s.backoffMin, s.backoffMax = lo, hi }
}

// WithNameIndexMax sets the largest catalog whose tool names the head
// indexes for a one-read Lookup. Default DefaultNameIndexMax.
func WithNameIndexMax(n int) DynamoOption { return func(s *Dynamo) { s.nameIndexMax = n } }

// NewDynamo returns a store in table (created by CreateTable or the
// template). Every call retries throttling, server faults and dropped
// connections until its context ends or a backoff would outlast its
// deadline, then fails with ErrUnavailable.
func NewDynamo(client DynamoAPI, table string, opts ...DynamoOption) *Dynamo {
	s := &Dynamo{
		api:          client,
		table:        table,
		retention:    DefaultRetention,
		now:          time.Now,
		backoffMin:   DefaultBackoffMin,
		backoffMax:   DefaultBackoffMax,
		nameIndexMax: DefaultNameIndexMax,
		exceptionMax: maxModelExceptions,
		chunkBytes:   manifestChunkBytes,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// head is the head item; exists is false when there is none.
type head struct {
	exists          bool
	version         string
	latest          string
	hash            string
	protocol        string
	serverName      string
	serverVersion   string
	discovery       string
	discoveredAt    time.Time
	checkedAt       time.Time
	toolCount       int
	refusedCount    int
	toolsExpire     int64
	shards          int
	nameIndex       []byte
	nameIndexStored bool
	exceptions      []byte // model_name_exceptions
	modelsInItems   bool
	changes         []byte // encodeChanges; nil for versions stored before diffs
	manifestChunks  int    // the version's manifest items; 0: the old layout
	nameHints       []byte // hintsByte per nameIndex entry; nil before hints
	retiring        string // the version the last flip replaced
	failure         *Failure
	sealedURL       []byte // server_url_sealed
	clearURL        string // server_url, as heads kept it before sealing
	origin          string
	vaultIDs        []string
	interval        time.Duration
	intervalSet     bool
	nextDue         time.Time
}

func (h *head) expired(now time.Time) bool {
	return h.toolsExpire != 0 && now.Unix() >= h.toolsExpire
}

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

// updateHead applies a conditional update to the head; false means the
// condition did not hold.
func (s *Dynamo) updateHead(ctx context.Context, id, update, cond string, e expr) (bool, error) {
	err := s.retry(ctx, "update head of "+strconv.Quote(id), func() error {
		_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       headKey(id),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	return err == nil, err
}

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
			if c.Changes, err = decodeChanges(h.changes); err != nil {
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

// RecordFailure records f as the last failure of id unless a later one is
// recorded. It never touches the tools; a zero f.At means now.
func (s *Dynamo) RecordFailure(ctx context.Context, id string, f Failure) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if f.At.IsZero() {
		f.At = s.now()
	}
	var e expr
	at := formatTime(f.At)
	update := "SET " + e.n(attrFailure) + " = " + e.v("f", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrErrorType: &types.AttributeValueMemberS{Value: text.Truncate(f.ErrorType, maxFailureType)},
		attrMessage:   &types.AttributeValueMemberS{Value: text.Truncate(f.Message, maxFailureText)},
		attrAt:        &types.AttributeValueMemberS{Value: at},
	}})
	cond := "attribute_not_exists(" + e.n(attrFailure) + ") OR " + e.n(attrFailure) + "." + e.n(attrAt) + " < " + e.s("at", at)
	_, err := s.updateHead(ctx, id, update, cond, e)
	return err
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

func (s *Dynamo) head(ctx context.Context, id string) (head, error) {
	item, err := s.getItem(ctx, id, HeadSortKey)
	if err != nil || item == nil {
		return head{}, err
	}
	h := head{
		exists:        true,
		version:       stringAttr(item, attrVersion),
		latest:        stringAttr(item, attrLatest),
		hash:          stringAttr(item, attrHash),
		protocol:      stringAttr(item, attrProtocol),
		serverName:    stringAttr(item, attrServerName),
		serverVersion: stringAttr(item, attrServerVersion),
		discovery:     stringAttr(item, attrDiscovery),
		discoveredAt:  parseTime(stringAttr(item, attrDiscoveredAt)),
		checkedAt:     parseTime(stringAttr(item, attrCheckedAt)),
	}
	h.toolCount, _ = strconv.Atoi(numberAttr(item, attrToolCount))
	h.refusedCount, _ = strconv.Atoi(numberAttr(item, attrRefusedCount))
	h.toolsExpire, _ = strconv.ParseInt(numberAttr(item, attrToolsExpire), 10, 64)
	if h.shards, _ = strconv.Atoi(numberAttr(item, attrShards)); h.shards < 1 {
		h.shards = 1
	}
	if b, ok := item[attrNameIndex].(*types.AttributeValueMemberB); ok {
		h.nameIndex, h.nameIndexStored = b.Value, true
	}
	h.exceptions = binaryAttr(item, attrModelExceptions)
	h.manifestChunks, _ = strconv.Atoi(numberAttr(item, attrManifestChunks))
	h.nameHints = binaryAttr(item, attrNameHints)
	h.retiring = stringAttr(item, attrRetiring)
	h.changes = binaryAttr(item, attrChanges)
	if b, ok := item[attrModelsInItems].(*types.AttributeValueMemberBOOL); ok {
		h.modelsInItems = b.Value
	}
	h.readSchedule(item)
	if m, ok := item[attrFailure].(*types.AttributeValueMemberM); ok {
		h.failure = &Failure{
			ErrorType: stringAttr(m.Value, attrErrorType),
			Message:   stringAttr(m.Value, attrMessage),
			At:        parseTime(stringAttr(m.Value, attrAt)),
		}
	}
	return h, nil
}

func (h *head) catalog(id string) *Catalog {
	return &Catalog{
		ID:              id,
		Version:         h.version,
		ProtocolVersion: h.protocol,
		ServerName:      h.serverName,
		ServerVersion:   h.serverVersion,
		ServerDiscovery: h.discovery,
		ContentHash:     h.hash,
		DiscoveredAt:    h.discoveredAt,
		CheckedAt:       h.checkedAt,
		LastFailure:     h.failure,
		ServerOrigin:    h.origin,
		VaultIDs:        h.vaultIDs,
		RefreshInterval: h.interval,
		NextDue:         h.nextDue,
	}
}

// getItem reads one item consistently; nil when absent.
func (s *Dynamo) getItem(ctx context.Context, id, sk string) (map[string]types.AttributeValue, error) {
	var out *dynamodb.GetItemOutput
	err := s.retry(ctx, "get "+strconv.Quote(id)+" "+sk, func() (err error) {
		out, err = s.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(s.table),
			Key:            itemKey(id, sk),
			ConsistentRead: aws.Bool(true),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// query calls fn for every item under partition key pk, in sort-key
// order, reading consistently; keysOnly projects the keys.
func (s *Dynamo) query(ctx context.Context, pk string, keysOnly bool, fn func(map[string]types.AttributeValue) error) error {
	var attrs []string
	if keysOnly {
		attrs = []string{PartitionKey, SortKey}
	}
	return s.queryAttrs(ctx, pk, attrs, fn)
}

// queryAttrs is query projecting attrs; nil is every attribute.
func (s *Dynamo) queryAttrs(ctx context.Context, pk string, attrs []string, fn func(map[string]types.AttributeValue) error) error {
	var e expr
	in := &dynamodb.QueryInput{
		KeyConditionExpression: aws.String(e.n(PartitionKey) + " = " + e.s("pk", pk)),
	}
	if attrs != nil {
		names := make([]string, len(attrs))
		for i, a := range attrs {
			names[i] = e.n(a)
		}
		in.ProjectionExpression = aws.String(strings.Join(names, ", "))
	}
	return s.runQuery(ctx, in, e, fn)
}

// queryPrefix calls fn for every item under pk whose sort key starts with
// prefix.
func (s *Dynamo) queryPrefix(ctx context.Context, pk, prefix string, fn func(map[string]types.AttributeValue) error) error {
	var e expr
	in := &dynamodb.QueryInput{
		KeyConditionExpression: aws.String(e.n(PartitionKey) + " = " + e.s("pk", pk) +
			" AND begins_with(" + e.n(SortKey) + ", " + e.s("prefix", prefix) + ")"),
	}
	return s.runQuery(ctx, in, e, fn)
}

func (s *Dynamo) runQuery(ctx context.Context, in *dynamodb.QueryInput, e expr, fn func(map[string]types.AttributeValue) error) error {
	in.TableName = aws.String(s.table)
	in.ConsistentRead = aws.Bool(true)
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	for {
		var out *dynamodb.QueryOutput
		err := s.retry(ctx, "query "+*in.KeyConditionExpression, func() (err error) {
			out, err = s.api.Query(ctx, in)
			return err
		})
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// decodeToolItem reads a tool item, plain or compressed; one without
// model_name has its name's default model name.
func decodeToolItem(item map[string]types.AttributeValue) (mcp.Tool, error) {
	t, err := decodeToolFields(item)
	if err != nil {
		return mcp.Tool{}, err
	}
	if t.ModelName = stringAttr(item, attrModelName); t.ModelName == "" {
		t.ModelName = defaultModelName(t.Name)
	}
	return t, nil
}

func decodeToolFields(item map[string]types.AttributeValue) (mcp.Tool, error) {
	if z, ok := item[attrZipped].(*types.AttributeValueMemberB); ok {
		return gunzipTool(z.Value)
	}
	b, ok := item[attrSchema].(*types.AttributeValueMemberB)
	if !ok {
		return mcp.Tool{}, fmt.Errorf("%w: no %s", errBadTool, attrSchema)
	}
	a, err := decodeAnnotations(binaryAttr(item, attrAnnotations))
	if err != nil {
		return mcp.Tool{}, err
	}
	return mcp.Tool{
		Name:         stringAttr(item, attrName),
		Title:        stringAttr(item, attrTitle),
		Description:  stringAttr(item, attrDescription),
		InputSchema:  b.Value,
		OutputSchema: nonEmpty(binaryAttr(item, attrOutputSchema)),
		Annotations:  a,
		Meta:         nonEmpty(binaryAttr(item, attrMeta)),
	}, nil
}

// toolShard is the shard of the tool whose name hashes to nameHash.
func toolShard(nameHash []byte, shards int) int {
	return int(binary.BigEndian.Uint16(nameHash)) % shards
}

func markerSortKey(version string) string { return "v#" + version }

func headKey(id string) map[string]types.AttributeValue { return itemKey(id, HeadSortKey) }

func itemKey(id, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PartitionKey: &types.AttributeValueMemberS{Value: id},
		SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}

// discovery adds d's kept ServerDiscovery to set, or its removal to
// remove when there is none.
func (e *expr) discovery(d Discovery, set, remove []string) ([]string, []string) {
	if kept := keptDiscovery(d); kept != "" {
		return append(set, e.n(attrDiscovery)+" = "+e.s("sd", kept)), remove
	}
	return set, append(remove, e.n(attrDiscovery))
}

// updateExpr is an update expression of set and remove clauses.
func updateExpr(set, remove []string) string {
	u := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		u += " REMOVE " + strings.Join(remove, ", ")
	}
	return u
}

// expr collects the placeholders of one expression: every attribute name
// goes through #name, so reserved words never matter.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expr) n(attr string) string {
	if e.names == nil {
		e.names = map[string]string{}
	}
	e.names["#"+attr] = attr
	return "#" + attr
}

func (e *expr) v(ph string, v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	e.values[":"+ph] = v
	return ":" + ph
}

func (e *expr) s(ph, v string) string { return e.v(ph, &types.AttributeValueMemberS{Value: v}) }

func (e *expr) b(ph string, v []byte) string { return e.v(ph, &types.AttributeValueMemberB{Value: v}) }

func (e *expr) num(ph string, v int64) string {
	return e.v(ph, &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)})
}
