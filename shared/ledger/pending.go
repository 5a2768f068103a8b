package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// attrPrevOwner is, on a pending record, the lease that suspended it: what
// a retried Suspend finds to know its write landed.
const attrPrevOwner = "prev_owner"

// Suspend stores p as key's pending state and ends the lease, provided this
// value still holds it (else ErrNotOwner). The next Begin on key takes a
// lease and returns p in Entry.Pending; two Begins at once get one lease
// and one ErrInProgress. p's JSON over MaxOutcomeBytes is ErrTooLarge.
func (d *Dynamo) Suspend(ctx context.Context, key string, p Pending) error {
	pk, owner, err := d.held(key)
	if err != nil {
		return err
	}
	body, err := encodePending(key, p)
	if err != nil {
		return err
	}
	return d.suspend(ctx, key, pk, owner, string(body), "suspend")
}

// suspend writes key's record back to pending with raw, conditional on
// owner's lease; op names the operation (suspend, or release of a lease
// taken on a pending record).
func (d *Dynamo) suspend(ctx context.Context, key, pk, owner, raw, op string) error {
	_, err := d.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.table),
		Item: map[string]types.AttributeValue{
			KeyAttribute:  &types.AttributeValueMemberS{Value: pk},
			attrState:     &types.AttributeValueMemberS{Value: statePending},
			attrOwner:     &types.AttributeValueMemberS{Value: newOwner()},
			attrPrevOwner: &types.AttributeValueMemberS{Value: owner},
			attrPending:   &types.AttributeValueMemberS{Value: raw},
			TTLAttribute:  &types.AttributeValueMemberN{Value: d.expires(d.now())},
		},
		ConditionExpression:                 aws.String("#state = :running AND #owner = :owner"),
		ExpressionAttributeNames:            map[string]string{"#state": attrState, "#owner": attrOwner},
		ExpressionAttributeValues:           ownerValues(owner),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return d.settle(ctx, key, pk, owner, op, err)
}

// resume takes a lease on rec, a pending record or an expired lease taken
// on one, keeping its pending state. ok is false when the record changed
// since it was read.
func (d *Dynamo) resume(ctx context.Context, key, pk string, rec record, now time.Time) (Entry, bool, error) {
	var p Pending
	if err := json.Unmarshal([]byte(rec.pending), &p); err != nil {
		return Entry{}, false, fmt.Errorf("ledger: begin %s: unreadable pending state: %w", ref(key), err)
	}
	prev := stateRunning
	if rec.suspended {
		prev = statePending
	}
	owner := newOwner()
	_, err := d.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.table),
		Item: map[string]types.AttributeValue{
			KeyAttribute:   &types.AttributeValueMemberS{Value: pk},
			attrState:      &types.AttributeValueMemberS{Value: stateRunning},
			attrOwner:      &types.AttributeValueMemberS{Value: owner},
			attrLeaseUntil: millis(now.Add(d.lease)),
			attrPending:    &types.AttributeValueMemberS{Value: rec.pending},
			TTLAttribute:   &types.AttributeValueMemberN{Value: d.expires(now)},
		},
		ConditionExpression:      aws.String("#state = :prev AND #owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#state": attrState, "#owner": attrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prev":  &types.AttributeValueMemberS{Value: prev},
			":owner": &types.AttributeValueMemberS{Value: rec.owner},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
	case errors.As(err, &failed):
		item, rerr := d.existing(ctx, pk, failed)
		if rerr != nil {
			return Entry{}, false, fmt.Errorf("ledger: begin %s: read the existing record: %w", ref(key), rerr)
		}
		if got, derr := decode(item); derr != nil || got.suspended || got.done || got.owner != owner {
			return Entry{}, false, nil
		}
		// Our write landed and its answer was lost.
	default:
		return Entry{}, false, fmt.Errorf("ledger: begin %s: %w", ref(key), err)
	}
	d.holds.setPending(key, owner, rec.pending)
	return Entry{Pending: &p, TookOver: !rec.suspended}, true, nil
}

// Suspend behaves as Dynamo.Suspend.
func (m *Memory) Suspend(ctx context.Context, key string, p Pending) error {
	body, err := encodePending(key, p)
	if err != nil {
		return err
	}
	return m.settle(ctx, key, "suspend", func(pk, owner string) {
		m.store.records[pk] = record{suspended: true, owner: newOwner(), prevOwner: owner, pending: string(body)}
	})
}

// resumable reports whether Begin continues old rather than refusing it.
func resumable(old record, now time.Time) bool {
	return old.pending != "" && (old.suspended || !old.leaseUntil.After(now))
}
