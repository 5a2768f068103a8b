package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is what the store needs of DynamoDB.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Store keeps audit chains in a table of their own (CreateTable), a
// partition per catalog id: an item per entry (sort key "e#" + its
// zero-padded Seq) and a head item ("head") holding the last Seq and its
// Hash. A table of its own, not the catalog table: any string is a catalog
// id, so no key prefix could keep the two apart, and the functions'
// role may append to it without the right to update or delete.
type Store struct {
	api   DynamoAPI
	table string
	now   func() time.Time
}

// New returns a store in table.
func New(api DynamoAPI, table string) *Store {
	return &Store{api: api, table: table, now: time.Now}
}

// appendTries is how many times Append retries after another writer
// appended to the same chain first.
const appendTries = 8

// chainHead is the head item of a chain.
type chainHead struct {
	Seq  int64  `dynamodbav:"seq"`
	Hash string `dynamodbav:"hash"`
}

// Append adds e to its catalog's chain: Seq one past the last entry, At
// now, Prev the last entry's Hash, written with the head in one
// transaction conditional on the head being unchanged. It returns the
// entry as stored.
func (s *Store) Append(ctx context.Context, e Entry) (Entry, error) {
	e, err := clean(e, s.now())
	if err != nil {
		return Entry{}, err
	}
	for range appendTries {
		h, found, err := s.head(ctx, e.CatalogID)
		if err != nil {
			return Entry{}, err
		}
		e.Seq, e.Prev = h.Seq+1, h.Hash
		err = s.write(ctx, e, h, found)
		var cancelled *types.TransactionCanceledException
		switch {
		case err == nil:
			return e, nil
		case !errors.As(err, &cancelled):
			return Entry{}, fmt.Errorf("audit: append to %q: %w", e.CatalogID, err)
		}
	}
	return Entry{}, fmt.Errorf("audit: append to %q: %d writers came first", e.CatalogID, appendTries)
}

func (s *Store) head(ctx context.Context, id string) (chainHead, bool, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id, headKey), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return chainHead{}, false, fmt.Errorf("audit: read the head of %q: %w", id, err)
	}
	if out.Item == nil {
		return chainHead{}, false, nil
	}
	var h chainHead
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return chainHead{}, false, fmt.Errorf("audit: the head of %q: %w", id, err)
	}
	return h, true, nil
}

func (s *Store) write(ctx context.Context, e Entry, was chainHead, found bool) error {
	item, err := attributevalue.MarshalMap(e)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	for k, v := range key(e.CatalogID, entryKey(e.Seq)) {
		item[k] = v
	}
	newHead, err := attributevalue.MarshalMap(chainHead{Seq: e.Seq, Hash: Hash(e)})
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	for k, v := range key(e.CatalogID, headKey) {
		newHead[k] = v
	}
	cond := expression.AttributeNotExists(expression.Name(PartitionKey))
	if found {
		cond = expression.Name("seq").Equal(expression.Value(was.Seq))
	}
	hx, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	ex, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(PartitionKey))).Build()
	if err != nil {
		return err
	}
	_, err = s.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item,
			ConditionExpression: ex.Condition(), ExpressionAttributeNames: ex.Names()}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: newHead,
			ConditionExpression: hx.Condition(), ExpressionAttributeNames: hx.Names(), ExpressionAttributeValues: hx.Values()}},
	}})
	return err
}

const headKey = "head"

func entryKey(seq int64) string { return fmt.Sprintf("e#%020d", seq) }

func key(id, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PartitionKey: &types.AttributeValueMemberS{Value: id},
		SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}
