package catalog

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/text"
)

// The schedule on the head (docs/catalog.md "The schedule"). Put writes
// the server (sealed, see SealedURLAttribute), vaults, interval, due time
// and due shard; shared/schedule writes the rest. ServerURLAttribute is
// the URL in the clear as heads kept it before sealing: Put removes it.
// DueIndex is a sparse global secondary index: only a scheduled head has
// DueShardAttribute, so it holds one entry per scheduled catalog, keyed by
// shard and due time (epoch seconds).
const (
	DueIndex                = "due"
	DueShardAttribute       = "due_shard"
	NextDueAttribute        = "next_due"
	ServerURLAttribute      = "server_url"
	VaultIDsAttribute       = "vault_ids"
	IntervalAttribute       = "refresh_interval"
	FailuresAttribute       = "failures"
	RetryAfterAttribute     = "retry_after"
	StaleRequestedAttribute = "stale_requested_at"
	DueShards               = 8
	DefaultRefreshInterval  = time.Hour
)

// DueIndexProjection is the non-key attributes DueIndex carries: what a
// sweep needs to enqueue a discovery without reading the head.
// ServerURLAttribute stays projected so that a deployed index keeps its
// definition; no head Put writes carries it.
var DueIndexProjection = []string{ServerURLAttribute, VaultIDsAttribute, IntervalAttribute, FailuresAttribute, RetryAfterAttribute}

// Schedule is how to discover a catalog again. When Discovery.Schedule is
// set, a Put that records the discovery (stored or confirmed unchanged)
// records ServerURL (sealed by the store's Sealer, with its origin in the
// clear; the origin only without a Sealer) and VaultIDs, and the interval:
// *Interval when set, else the recorded one, DefaultRefreshInterval for a
// catalog without one;
// 0 takes the catalog off the schedule. It makes the catalog due one
// interval after the discovery started and ends a failure streak. A nil
// Schedule leaves every schedule attribute as it is. The directory store
// keeps no schedule.
type Schedule struct {
	ServerURL string
	VaultIDs  []string
	Interval  *time.Duration
}

// sealedURL is a Schedule's server URL as the head keeps it: sealed (nil
// without a Sealer), and its origin.
type sealedURL struct {
	sealed []byte
	origin string
}

// DueShard is the DueIndex partition of id: "0" to DueShards-1.
func DueShard(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return strconv.Itoa(int(h.Sum32() % DueShards))
}

// interval is the interval a Put of sc records over the head's.
func (sc *Schedule) interval(h head) time.Duration {
	switch {
	case sc.Interval != nil:
		return *sc.Interval
	case h.intervalSet:
		return h.interval
	}
	return DefaultRefreshInterval
}

// schedule adds the attributes a Put of sc (its URL as url) records for
// id to set and remove; nothing when sc is nil.
func (e *expr) schedule(id string, sc *Schedule, url sealedURL, h head, started time.Time, set, remove []string) ([]string, []string) {
	if sc == nil {
		return set, remove
	}
	iv := sc.interval(h)
	vaults := make([]types.AttributeValue, len(sc.VaultIDs))
	for i, v := range sc.VaultIDs {
		vaults[i] = &types.AttributeValueMemberS{Value: v}
	}
	set = append(set, e.n(OriginAttribute)+" = "+e.s("so", url.origin))
	if url.sealed != nil {
		set = append(set, e.n(SealedURLAttribute)+" = "+e.b("su", url.sealed))
	} else {
		remove = append(remove, e.n(SealedURLAttribute))
	}
	remove = append(remove, e.n(ServerURLAttribute))
	set = append(set,
		e.n(VaultIDsAttribute)+" = "+e.v("vi", &types.AttributeValueMemberL{Value: vaults}),
		e.n(IntervalAttribute)+" = "+e.num("ri", int64(iv/time.Second)),
	)
	remove = append(remove, e.n(FailuresAttribute), e.n(RetryAfterAttribute))
	if iv <= 0 {
		return set, append(remove, e.n(NextDueAttribute), e.n(DueShardAttribute))
	}
	return append(set,
		e.n(NextDueAttribute)+" = "+e.num("nd", started.Add(iv).Unix()),
		e.n(DueShardAttribute)+" = "+e.s("ds", DueShard(id)),
	), remove
}

// readSchedule fills h's schedule fields from the head item.
func (h *head) readSchedule(item map[string]types.AttributeValue) {
	h.clearURL = stringAttr(item, ServerURLAttribute)
	h.sealedURL = binaryAttr(item, SealedURLAttribute)
	if h.origin = stringAttr(item, OriginAttribute); h.origin == "" {
		h.origin = text.Origin(h.clearURL)
	}
	if l, ok := item[VaultIDsAttribute].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				h.vaultIDs = append(h.vaultIDs, s.Value)
			}
		}
	}
	if n, err := strconv.ParseInt(numberAttr(item, IntervalAttribute), 10, 64); err == nil {
		h.interval, h.intervalSet = time.Duration(n)*time.Second, true
	}
	if n, err := strconv.ParseInt(numberAttr(item, NextDueAttribute), 10, 64); err == nil {
		h.nextDue = time.Unix(n, 0).UTC()
	}
}

// dueIndex is DueIndex as CreateTable defines it.
func dueIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(DueIndex),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(DueShardAttribute), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(NextDueAttribute), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{
			ProjectionType:   types.ProjectionTypeInclude,
			NonKeyAttributes: DueIndexProjection,
		},
	}
}
