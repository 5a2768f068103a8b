// Package schedule keeps catalogs fresh over the catalog table's head
// items (docs/catalog.md "The schedule"): a sweep of the sparse due index
// that claims each due catalog once per interval and enqueues a discover
// request for it, the backoff of a catalog whose discoveries fail, and the
// deduplication of re-discoveries that calls request when they find a
// catalog stale. Every deduplication is a conditional update in DynamoDB,
// so it holds across sweeps, instances and calls.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// DynamoAPI is the part of the DynamoDB client the schedule uses: Query on
// the due index, GetItem and UpdateItem on heads.
type DynamoAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Defaults of a zero Options.
const (
	DefaultPageSize    = 100
	DefaultBackoffCap  = 24 * time.Hour
	DefaultStaleWindow = time.Minute
)

// Options configures a Table. Zero fields take the defaults: Now
// time.Now, PageSize DefaultPageSize (items per due-index Query),
// BackoffCap DefaultBackoffCap, StaleWindow DefaultStaleWindow (at most one
// stale-call re-discovery per catalog per window).
type Options struct {
	Now         func() time.Time
	PageSize    int32
	BackoffCap  time.Duration
	StaleWindow time.Duration
}

// Table is the schedule over one catalog table. It is safe for concurrent
// use.
type Table struct {
	api   DynamoAPI
	table string
	opts  Options
}

// New returns the schedule of the catalog table named table.
func New(api DynamoAPI, table string, o Options) *Table {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.BackoffCap <= 0 {
		o.BackoffCap = DefaultBackoffCap
	}
	if o.StaleWindow <= 0 {
		o.StaleWindow = DefaultStaleWindow
	}
	return &Table{api: api, table: table, opts: o}
}

// Request is a discover request as the schedule enqueues it: a
// re-discovery, without server_url (discover opens the URL the catalog's
// head keeps sealed), task_token and refresh_interval_seconds (the catalog
// keeps its recorded interval).
type Request struct {
	CatalogID string   `json:"catalog_id"`
	VaultIDs  []string `json:"vault_ids,omitempty"`
}

// Backoff is a catalog's failure streak as RecordFailure left it.
// Failures 0 means the catalog is not on the schedule and nothing was
// recorded.
type Backoff struct {
	Failures   int
	RetryAfter time.Time
}

// BackoffAfter is the wait after the n-th failure in a row (n >= 1) of a
// catalog with the given interval: interval × 2^n, at most limit. With the
// default cap a dead server costs one attempt a day.
func BackoffAfter(n int, interval, limit time.Duration) time.Duration {
	d := interval
	for range n {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// RecordFailure records a failed discovery of id on its head: failures + 1
// and retry_after = now + BackoffAfter(failures, interval, cap). A head
// that is not on the schedule is left alone (Backoff{}). A successful
// discovery (a Put with a catalog.Schedule) ends the streak. Two requests:
// GetItem, then UpdateItem conditional on the streak read; a concurrent
// record makes it read again, at most three times.
func (t *Table) RecordFailure(ctx context.Context, id string) (Backoff, error) {
	proj, err := expression.NewBuilder().WithProjection(expression.NamesList(
		expression.Name(catalog.DueShardAttribute), expression.Name(catalog.IntervalAttribute), expression.Name(catalog.FailuresAttribute))).Build()
	if err != nil {
		return Backoff{}, fmt.Errorf("schedule: read the head of %q: %w", id, err)
	}
	for range 3 {
		out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:                aws.String(t.table),
			Key:                      headKey(id),
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     proj.Projection(),
			ExpressionAttributeNames: proj.Names(),
		})
		if err != nil {
			return Backoff{}, fmt.Errorf("schedule: read the head of %q: %w", id, err)
		}
		hs, err := catalog.DecodeSchedule(out.Item)
		if err != nil {
			return Backoff{}, fmt.Errorf("schedule: read the head of %q: %w", id, err)
		}
		if hs.DueShard == nil {
			return Backoff{}, nil
		}
		b := Backoff{Failures: 1}
		failures := expression.Name(catalog.FailuresAttribute)
		streak := expression.AttributeNotExists(failures)
		if hs.Failures != nil {
			b.Failures = int(*hs.Failures) + 1
			streak = failures.Equal(num(*hs.Failures))
		}
		b.RetryAfter = t.opts.Now().Add(BackoffAfter(b.Failures, hs.Every(), t.opts.BackoffCap)).Truncate(time.Second)
		e, err := expression.NewBuilder().
			WithUpdate(expression.Set(failures, num(int64(b.Failures))).Set(expression.Name(catalog.RetryAfterAttribute), num(b.RetryAfter.Unix()))).
			WithCondition(expression.AttributeExists(expression.Name(catalog.DueShardAttribute)).And(streak)).Build()
		if err != nil {
			return Backoff{}, fmt.Errorf("schedule: record the failure of %q: %w", id, err)
		}
		err = t.updateHead(ctx, id, e)
		if conditionFailed(err) {
			continue
		}
		if err != nil {
			return Backoff{}, fmt.Errorf("schedule: record the failure of %q: %w", id, err)
		}
		return b, nil
	}
	return Backoff{}, fmt.Errorf("schedule: record the failure of %q: %w", id, ErrContended)
}

// ErrContended reports a head that other writers kept changing.
var ErrContended = errors.New("the head changed under every attempt")

// StaleRequest claims the right to request one re-discovery of id for a
// call that found it stale: at most one per StaleWindow per catalog
// (stale_requested_at on the head). It returns ok false when another
// request holds the window, or the catalog has no head or one that keeps
// no server URL to discover it from. On ok it returns the head's recorded
// vault_ids, or vaultIDs when the head has none. Requests: UpdateItem, and
// GetItem when ok.
func (t *Table) StaleRequest(ctx context.Context, id string, vaultIDs []string) (Request, bool, error) {
	now := t.opts.Now()
	sr := expression.Name(catalog.StaleRequestedAttribute)
	e, err := expression.NewBuilder().WithUpdate(expression.Set(sr, num(now.Unix()))).WithCondition(
		expression.AttributeExists(expression.Name(catalog.PartitionKey)).
			And(expression.AttributeExists(expression.Name(catalog.SealedURLAttribute)).Or(expression.AttributeExists(expression.Name(catalog.ServerURLAttribute)))).
			And(expression.AttributeNotExists(sr).Or(sr.LessThanEqual(num(now.Add(-t.opts.StaleWindow).Unix()))))).Build()
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule: claim a re-discovery of %q: %w", id, err)
	}
	err = t.updateHead(ctx, id, e)
	if conditionFailed(err) {
		return Request{}, false, nil
	}
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule: claim a re-discovery of %q: %w", id, err)
	}
	vi := expression.NamesList(expression.Name(catalog.VaultIDsAttribute))
	proj, err := expression.NewBuilder().WithProjection(vi).Build()
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule: read the head of %q: %w", id, err)
	}
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(t.table),
		Key:                      headKey(id),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     proj.Projection(),
		ExpressionAttributeNames: proj.Names(),
	})
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule: read the head of %q: %w", id, err)
	}
	hs, err := catalog.DecodeSchedule(out.Item)
	if err != nil {
		return Request{}, false, fmt.Errorf("schedule: read the head of %q: %w", id, err)
	}
	req := Request{CatalogID: id, VaultIDs: hs.VaultIDs}
	if !hs.VaultIDsRecorded {
		req.VaultIDs = vaultIDs
	}
	return req, true, nil
}

// updateHead applies e's update to id's head under e's condition.
func (t *Table) updateHead(ctx context.Context, id string, e expression.Expression) error {
	_, err := t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.table),
		Key:                       headKey(id),
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	})
	return err
}

func headKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: id},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
	}
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// num is n as a DynamoDB number, for an expression.
func num(n int64) expression.ValueBuilder {
	return expression.Value(&types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)})
}
