package localstack

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// MaxBatchItems is DynamoDB's limit on the requests of one BatchWriteItem,
// which moto does not enforce.
const MaxBatchItems = 25

// DynamoAPI is the part of *dynamodb.Client that Strict wraps.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Strict is a DynamoAPI over moto that behaves as DynamoDB where our
// stores depend on it:
//   - Writes to single items are atomic: moto evaluates a condition and then
//     writes without a lock, so racing conditional writes on one key can all
//     succeed and a concurrent GetItem can see half an update. Strict runs
//     each PutItem, UpdateItem and DeleteItem alone, and GetItems only
//     between them. Share one Strict among racing writers.
//   - BatchWriteItem takes at most MaxBatchItems requests and no key twice;
//     a violation is answered with a ValidationException, as DynamoDB does,
//     and passed to OnViolation when set.
//
// Set OnViolation before use; the methods are safe for concurrent use.
type Strict struct {
	DynamoAPI
	// Key names the key attributes compared for repeated keys in a batch;
	// empty checks only the count.
	Key []string
	// OnViolation, when set, receives each batch DynamoDB would refuse.
	OnViolation func(error)

	mu sync.RWMutex
}

// NewStrict wraps api; key names the table's key attributes.
func NewStrict(api DynamoAPI, key ...string) *Strict {
	return &Strict{DynamoAPI: api, Key: key}
}

// BatchWriteItem checks the limits, then forwards.
func (s *Strict) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := CheckBatch(in, s.Key...); err != nil {
		if s.OnViolation != nil {
			s.OnViolation(err)
		}
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
	}
	return s.DynamoAPI.BatchWriteItem(ctx, in, optFns...)
}

// PutItem forwards, excluding other writes and GetItems.
func (s *Strict) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.PutItem(ctx, in, optFns...)
}

// UpdateItem forwards, excluding other writes and GetItems.
func (s *Strict) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.UpdateItem(ctx, in, optFns...)
}

// DeleteItem forwards, excluding other writes and GetItems.
func (s *Strict) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.DeleteItem(ctx, in, optFns...)
}

// GetItem forwards, excluding writes.
func (s *Strict) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.DynamoAPI.GetItem(ctx, in, optFns...)
}

// CheckBatch reports a BatchWriteItem DynamoDB would refuse: more than
// MaxBatchItems requests, or, when key names the key attributes, one key
// twice in a table.
func CheckBatch(in *dynamodb.BatchWriteItemInput, key ...string) error {
	n := 0
	for table, reqs := range in.RequestItems {
		n += len(reqs)
		seen := map[string]bool{}
		for _, r := range reqs {
			if len(key) == 0 {
				break
			}
			var item map[string]types.AttributeValue
			switch {
			case r.PutRequest != nil:
				item = r.PutRequest.Item
			case r.DeleteRequest != nil:
				item = r.DeleteRequest.Key
			}
			k := keyString(item, key)
			if seen[k] {
				return fmt.Errorf("batch write to %s repeats key %s", table, k)
			}
			seen[k] = true
		}
	}
	if n > MaxBatchItems {
		return fmt.Errorf("batch write of %d requests, limit %d", n, MaxBatchItems)
	}
	return nil
}

// keyString joins the key attributes' values, each quoted with its type.
func keyString(item map[string]types.AttributeValue, key []string) string {
	var s string
	for _, name := range key {
		s += fmt.Sprintf("%s=%+v|", name, item[name])
	}
	return s
}
