package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is the part of *dynamodb.Client a Dynamo ledger uses.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Item attributes besides the key and TTL.
const (
	attrState      = "state"
	attrOwner      = "owner"
	attrLeaseUntil = "lease_until"
	attrOutcome    = "outcome"
	attrPending    = "pending"

	stateRunning = "running"
	stateDone    = "done"
	statePending = "pending"
)

// beginAttempts bounds Begin's retries when the item changes between its
// conditional write and its read.
const beginAttempts = 3

// Dynamo is a ledger in a DynamoDB table (schema: package doc). Leases it
// takes are remembered in the value: Complete and Release succeed only on the
// value whose Begin took the lease. Safe for concurrent use; set Now and
// Retention before first use.
type Dynamo struct {
	api   DynamoAPI
	table string
	lease time.Duration

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Retention is the records' TTL after their last write; zero means
	// DefaultRetention.
	Retention time.Duration

	holds holds
}

// NewDynamo returns a ledger in table whose leases last lease. The lease
// must outlast the longest delivery (the function timeout), or a slow call
// can be taken over and run twice.
func NewDynamo(api DynamoAPI, table string, lease time.Duration) *Dynamo {
	return &Dynamo{api: api, table: table, lease: lease}
}

func (d *Dynamo) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dynamo) expires(now time.Time) string {
	r := d.Retention
	if r == 0 {
		r = DefaultRetention
	}
	return strconv.FormatInt(now.Add(r).Unix(), 10)
}

// Begin takes the lease on key with a conditional write: a new key or an
// expired lease starts a call (Entry.Done false); a completed key returns its
// Entry; a live lease held elsewhere is ErrInProgress. A write refused by the
// lease it took itself (a retry after a lost answer) starts the call too,
// with TookOver set, since the lost answer hid what it replaced.
func (d *Dynamo) Begin(ctx context.Context, key string) (Entry, error) {
	pk, err := storedKey(key)
	if err != nil {
		return Entry{}, err
	}
	for range beginAttempts {
		now := d.now()
		owner := newOwner()
		out, err := d.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(d.table),
			Item: map[string]types.AttributeValue{
				KeyAttribute:   &types.AttributeValueMemberS{Value: pk},
				attrState:      &types.AttributeValueMemberS{Value: stateRunning},
				attrOwner:      &types.AttributeValueMemberS{Value: owner},
				attrLeaseUntil: millis(now.Add(d.lease)),
				TTLAttribute:   &types.AttributeValueMemberN{Value: d.expires(now)},
			},
			ConditionExpression: aws.String("attribute_not_exists(#pk) OR (#state = :running AND #lease <= :now AND attribute_not_exists(#pending))"),
			ExpressionAttributeNames: map[string]string{
				"#pk": KeyAttribute, "#state": attrState, "#lease": attrLeaseUntil, "#pending": attrPending,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":running": &types.AttributeValueMemberS{Value: stateRunning},
				":now":     millis(now),
			},
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			d.holds.set(key, owner)
			return Entry{TookOver: len(out.Attributes) > 0}, nil
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return Entry{}, fmt.Errorf("ledger: begin %s: %w", ref(key), err)
		}
		item, err := d.existing(ctx, pk, failed)
		if err != nil {
			return Entry{}, fmt.Errorf("ledger: begin %s: read the existing record: %w", ref(key), err)
		}
		if item == nil {
			continue // released since the write: try again
		}
		rec, err := decode(item)
		if err != nil {
			return Entry{}, fmt.Errorf("ledger: begin %s: %w", ref(key), err)
		}
		if !rec.done && rec.owner == owner {
			// Our write landed and its answer was lost; the SDK's retry of
			// it was refused by our own lease. Whether the write replaced
			// an expired lease is lost with the answer: report the
			// cautious reading.
			d.holds.set(key, owner)
			return Entry{TookOver: true}, nil
		}
		if rec.done {
			return Entry{Done: true, Outcome: rec.outcome}, nil
		}
		if resumable(rec, now) {
			entry, ok, err := d.resume(ctx, key, pk, rec, now)
			if err != nil || ok {
				return entry, err
			}
			continue // changed since the read: try again
		}
		if rec.leaseUntil.After(now) {
			return Entry{}, &InProgressError{Key: ref(key), Until: rec.leaseUntil}
		}
		// The lease expired between the write and the read: try again.
	}
	return Entry{}, fmt.Errorf("%w: %s changed under %d attempts to begin", ErrInProgress, ref(key), beginAttempts)
}

// Complete stores o as key's outcome and ends the lease, provided this value
// still holds it (else ErrNotOwner); a refused write that finds the record
// already done under this value's lease (a retry after a lost answer)
// succeeds. An outcome over MaxOutcomeBytes is ErrTooLarge. The record
// expires after Retention.
func (d *Dynamo) Complete(ctx context.Context, key string, o Outcome) error {
	pk, owner, err := d.held(key)
	if err != nil {
		return err
	}
	body, err := encodeOutcome(key, o)
	if err != nil {
		return err
	}
	_, err = d.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.table),
		Item: map[string]types.AttributeValue{
			KeyAttribute: &types.AttributeValueMemberS{Value: pk},
			attrState:    &types.AttributeValueMemberS{Value: stateDone},
			attrOwner:    &types.AttributeValueMemberS{Value: owner},
			attrOutcome:  &types.AttributeValueMemberS{Value: string(body)},
			TTLAttribute: &types.AttributeValueMemberN{Value: d.expires(d.now())},
		},
		ConditionExpression:                 aws.String("#state = :running AND #owner = :owner"),
		ExpressionAttributeNames:            map[string]string{"#state": attrState, "#owner": attrOwner},
		ExpressionAttributeValues:           ownerValues(owner),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return d.settle(ctx, key, pk, owner, "complete", err)
}

// held returns key's stored key and the lease this value holds on it, or
// ErrNotOwner when it holds none.
func (d *Dynamo) held(key string) (pk, owner string, err error) {
	if pk, err = storedKey(key); err != nil {
		return "", "", err
	}
	owner, ok := d.holds.get(key)
	if !ok {
		return "", "", fmt.Errorf("%w: %s", ErrNotOwner, ref(key))
	}
	return pk, owner, nil
}

// Release deletes key's record so a redelivery can run the call, provided
// this value still holds the lease (else ErrNotOwner). A record already
// gone counts as released: a redelivery can run either way.
func (d *Dynamo) Release(ctx context.Context, key string) error {
	pk, owner, err := d.held(key)
	if err != nil {
		return err
	}
	if raw := d.holds.pendingOf(key); raw != "" {
		return d.suspend(ctx, key, pk, owner, raw, "release")
	}
	_, err = d.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(d.table),
		Key:                                 map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: pk}},
		ConditionExpression:                 aws.String("#state = :running AND #owner = :owner"),
		ExpressionAttributeNames:            map[string]string{"#state": attrState, "#owner": attrOwner},
		ExpressionAttributeValues:           ownerValues(owner),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return d.settle(ctx, key, pk, owner, "release", err)
}

// settle forgets the lease unless the write failed for a reason worth
// retrying, and maps a failed condition to ErrNotOwner unless the record
// shows the write already landed (a retry after a lost answer): done under
// owner after a complete, gone after a release.
func (d *Dynamo) settle(ctx context.Context, key, pk, owner, op string, err error) error {
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		d.holds.drop(key, owner)
		return nil
	case errors.As(err, &failed):
		item, err := d.existing(ctx, pk, failed)
		if err != nil {
			return fmt.Errorf("ledger: %s %s: read the existing record: %w", op, ref(key), err)
		}
		d.holds.drop(key, owner)
		if landed(op, item, owner) {
			return nil
		}
		return fmt.Errorf("%w: %s: the lease was taken over or the record is gone", ErrNotOwner, ref(key))
	default:
		return fmt.Errorf("ledger: %s %s: %w", op, ref(key), err)
	}
}

// landed reports whether item, read after op's write was refused, is what
// that write leaves behind.
func landed(op string, item map[string]types.AttributeValue, owner string) bool {
	if op == "release" && item == nil {
		return true
	}
	rec, err := decode(item)
	if op != "complete" {
		return err == nil && rec.suspended && rec.prevOwner == owner
	}
	return err == nil && rec.done && rec.owner == owner
}

func ownerValues(owner string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":running": &types.AttributeValueMemberS{Value: stateRunning},
		":owner":   &types.AttributeValueMemberS{Value: owner},
	}
}

func millis(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// record is a decoded item.
type record struct {
	done       bool
	suspended  bool
	owner      string
	prevOwner  string // a suspended record's: the lease that suspended it
	leaseUntil time.Time
	outcome    Outcome
	pending    string // the pending state's JSON, on a suspended or a resumed record
}

// stored is an item as stored, decoded with attributevalue; a nil pointer
// is an absent attribute.
type stored struct {
	State      string  `dynamodbav:"state"`
	Owner      string  `dynamodbav:"owner"`
	Pending    string  `dynamodbav:"pending"`
	PrevOwner  string  `dynamodbav:"prev_owner"`
	Outcome    *string `dynamodbav:"outcome"`
	LeaseUntil *int64  `dynamodbav:"lease_until"`
}

func decode(item map[string]types.AttributeValue) (record, error) {
	var it stored
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return record{}, fmt.Errorf("unreadable record: %w", err)
	}
	switch it.State {
	case "":
		return record{}, errors.New("record without state")
	case statePending:
		if it.Pending == "" {
			return record{}, errors.New("pending record without pending state")
		}
		return record{suspended: true, owner: it.Owner, prevOwner: it.PrevOwner, pending: it.Pending}, nil
	case stateDone:
		if it.Outcome == nil {
			return record{}, errors.New("done record without outcome")
		}
		var o Outcome
		if err := json.Unmarshal([]byte(*it.Outcome), &o); err != nil {
			return record{}, fmt.Errorf("done record with unreadable outcome: %w", err)
		}
		return record{done: true, owner: it.Owner, outcome: o}, nil
	case stateRunning:
		if it.LeaseUntil == nil {
			return record{}, errors.New("running record without lease_until")
		}
		return record{owner: it.Owner, leaseUntil: time.UnixMilli(*it.LeaseUntil), pending: it.Pending}, nil
	default:
		return record{}, fmt.Errorf("record with state %q", it.State)
	}
}

// holds maps keys to the owner tokens of leases this value took.
// A lease taken on a pending record remembers its pending state, which
// Release restores.
type holds struct {
	mu sync.Mutex
	m  map[string]hold
}

type hold struct{ owner, pending string }

func (h *holds) set(key, owner string) { h.setPending(key, owner, "") }

func (h *holds) setPending(key, owner, pending string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]hold)
	}
	h.m[key] = hold{owner, pending}
}

func (h *holds) get(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.m[key]
	return o.owner, ok
}

// pendingOf is the pending state the lease on key was taken on, or "".
func (h *holds) pendingOf(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key].pending
}

// drop forgets key's lease if it is still owner's.
func (h *holds) drop(key, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[key].owner == owner {
		delete(h.m, key)
	}
}

// existing is the record a conditional write was refused on: the one the
// refusal carries, else a consistent read of it.
func (d *Dynamo) existing(ctx context.Context, pk string, failed *types.ConditionalCheckFailedException) (map[string]types.AttributeValue, error) {
	if failed.Item != nil {
		return failed.Item, nil
	}
	got, err := d.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(d.table),
		Key:            map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return got.Item, nil
}
