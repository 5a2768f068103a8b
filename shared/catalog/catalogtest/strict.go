package catalogtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// StrictAPI is a catalog.DynamoAPI over moto that behaves as DynamoDB
// where the catalog depends on it:
//   - BatchWriteItem takes at most 25 requests and no key twice; a violation
//     fails the test and answers a ValidationException, as DynamoDB does.
//   - UpdateItem is atomic: moto evaluates a condition and then applies the
//     update without a lock, so concurrent conditional updates can all
//     succeed and a concurrent GetItem can see half an update. StrictAPI
//     runs each UpdateItem alone and GetItems only between them.
type StrictAPI struct {
	catalog.DynamoAPI
	tb testing.TB
	mu sync.RWMutex
}

// Strict wraps api in a StrictAPI reporting to tb.
func Strict(tb testing.TB, api catalog.DynamoAPI) *StrictAPI {
	return &StrictAPI{DynamoAPI: api, tb: tb}
}

// BatchWriteItem checks the limits, then forwards.
func (s *StrictAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := CheckBatch(in); err != nil {
		s.tb.Errorf("catalogtest: %v", err)
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: err.Error()}
	}
	return s.DynamoAPI.BatchWriteItem(ctx, in, optFns...)
}

// UpdateItem forwards, excluding other UpdateItems and GetItems.
func (s *StrictAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.UpdateItem(ctx, in, optFns...)
}

// GetItem forwards, excluding UpdateItems.
func (s *StrictAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.DynamoAPI.GetItem(ctx, in, optFns...)
}

// CheckBatch reports a BatchWriteItem DynamoDB would refuse: more than
// catalog.MaxBatchItems requests, or one key twice.
func CheckBatch(in *dynamodb.BatchWriteItemInput) error {
	n := 0
	for table, reqs := range in.RequestItems {
		n += len(reqs)
		seen := map[string]bool{}
		for _, r := range reqs {
			var item map[string]types.AttributeValue
			switch {
			case r.PutRequest != nil:
				item = r.PutRequest.Item
			case r.DeleteRequest != nil:
				item = r.DeleteRequest.Key
			}
			k := keyString(item)
			if seen[k] {
				return fmt.Errorf("batch write to %s repeats key %s", table, k)
			}
			seen[k] = true
		}
	}
	if n > catalog.MaxBatchItems {
		return fmt.Errorf("batch write of %d requests, limit %d", n, catalog.MaxBatchItems)
	}
	return nil
}

func keyString(item map[string]types.AttributeValue) string {
	var pk, sk string
	if v, ok := item[catalog.PartitionKey].(*types.AttributeValueMemberS); ok {
		pk = v.Value
	}
	if v, ok := item[catalog.SortKey].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	return pk + "|" + sk
}
