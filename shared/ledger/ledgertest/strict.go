// Package ledgertest helps test code that uses package ledger against a
// local moto server.
package ledgertest

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/ledger"
)

// StrictAPI is a ledger.DynamoAPI over moto whose conditional writes are
// atomic, as DynamoDB's are: moto evaluates a PutItem's or DeleteItem's
// condition and then writes without a lock, so racing Begins on one key can
// all start. StrictAPI runs each PutItem and DeleteItem alone and GetItems
// only between them; share one StrictAPI among racing ledgers.
type StrictAPI struct {
	ledger.DynamoAPI
	mu sync.RWMutex
}

// Strict wraps api in a StrictAPI.
func Strict(api ledger.DynamoAPI) *StrictAPI {
	return &StrictAPI{DynamoAPI: api}
}

// PutItem forwards, excluding other writes and GetItems.
func (s *StrictAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.PutItem(ctx, in, optFns...)
}

// DeleteItem forwards, excluding other writes and GetItems.
func (s *StrictAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.DynamoAPI.DeleteItem(ctx, in, optFns...)
}

// GetItem forwards, excluding writes.
func (s *StrictAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.DynamoAPI.GetItem(ctx, in, optFns...)
}
