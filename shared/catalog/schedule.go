package catalog

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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

// HeadSchedule is the schedule attributes of a head item, or of a
// DueIndex entry, as stored; DecodeSchedule is their one reader. Numbers
// are epoch seconds or seconds; a nil pointer is an absent attribute.
type HeadSchedule struct {
	CatalogID    string   `dynamodbav:"pk"`
	SealedURL    []byte   `dynamodbav:"server_url_sealed"`
	ClearURL     string   `dynamodbav:"server_url"` // as heads kept it before sealing
	ServerOrigin string   `dynamodbav:"server_origin"`
	VaultIDs     []string `dynamodbav:"vault_ids"` // nil when none
	// VaultIDsRecorded reports whether vault_ids is there, even empty.
	VaultIDsRecorded bool    `dynamodbav:"-"`
	Interval         *int64  `dynamodbav:"refresh_interval"`
	NextDue          *int64  `dynamodbav:"next_due"`
	DueShard         *string `dynamodbav:"due_shard"` // set: on the schedule
	Failures         *int64  `dynamodbav:"failures"`
	RetryAfter       *int64  `dynamodbav:"retry_after"`
}

// DecodeSchedule reads the schedule attributes of item (a head, or a
// DueIndex entry); the others are ignored.
func DecodeSchedule(item map[string]types.AttributeValue) (HeadSchedule, error) {
	var hs HeadSchedule
	if err := attributevalue.UnmarshalMap(item, &hs); err != nil {
		return HeadSchedule{}, fmt.Errorf("catalog: schedule attributes: %w", err)
	}
	hs.VaultIDsRecorded = hs.VaultIDs != nil
	if len(hs.VaultIDs) == 0 {
		hs.VaultIDs = nil
	}
	return hs, nil
}

// Recorded is the recorded refresh interval; 0 when none.
func (hs HeadSchedule) Recorded() time.Duration {
	if hs.Interval == nil {
		return 0
	}
	return time.Duration(*hs.Interval) * time.Second
}

// Every is the interval a sweep schedules by: the recorded one, or
// DefaultRefreshInterval when none is recorded or it is not positive.
func (hs HeadSchedule) Every() time.Duration {
	if iv := hs.Recorded(); iv > 0 {
		return iv
	}
	return DefaultRefreshInterval
}

// Due is NextDue as a time; zero when absent.
func (hs HeadSchedule) Due() time.Time {
	if hs.NextDue == nil {
		return time.Time{}
	}
	return time.Unix(*hs.NextDue, 0).UTC()
}

// Origin is the server's origin: as recorded, else that of ClearURL.
func (hs HeadSchedule) Origin() string {
	if hs.ServerOrigin != "" {
		return hs.ServerOrigin
	}
	return text.Origin(hs.ClearURL)
}

// interval is the interval a Put of sc records over the head's.
func (sc *Schedule) interval(h head) time.Duration {
	switch {
	case sc.Interval != nil:
		return *sc.Interval
	case h.sched.Interval != nil:
		return h.sched.Recorded()
	}
	return DefaultRefreshInterval
}

// schedule adds to u what a Put of sc (its URL as url) records for id;
// nothing when sc is nil.
func schedule(u expression.UpdateBuilder, id string, sc *Schedule, url sealedURL, h head, started time.Time) expression.UpdateBuilder {
	if sc == nil {
		return u
	}
	iv := sc.interval(h)
	vaults := make([]types.AttributeValue, len(sc.VaultIDs))
	for i, v := range sc.VaultIDs {
		vaults[i] = &types.AttributeValueMemberS{Value: v}
	}
	u = u.Set(name(OriginAttribute), str(url.origin))
	if url.sealed != nil {
		u = u.Set(name(SealedURLAttribute), bin(url.sealed))
	} else {
		u = u.Remove(name(SealedURLAttribute))
	}
	u = u.Remove(name(ServerURLAttribute)).
		Set(name(VaultIDsAttribute), expression.Value(&types.AttributeValueMemberL{Value: vaults})).
		Set(name(IntervalAttribute), num(int64(iv/time.Second))).
		Remove(name(FailuresAttribute)).Remove(name(RetryAfterAttribute))
	if iv <= 0 {
		return u.Remove(name(NextDueAttribute)).Remove(name(DueShardAttribute))
	}
	return u.Set(name(NextDueAttribute), num(started.Add(iv).Unix())).
		Set(name(DueShardAttribute), str(DueShard(id)))
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
