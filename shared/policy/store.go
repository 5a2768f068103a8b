package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/catalog"
)

// DynamoAPI is what Store needs of DynamoDB.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// SortKey is the sort key of a catalog's policy item in the catalog
// table, beside its head.
const SortKey = "policy"

// Store keeps each catalog's policy document in the catalog table: one
// item (partition the catalog id, sort key SortKey) with the document as
// written, its SHA-256 and when it was set.
type Store struct {
	api   DynamoAPI
	table string
	now   func() time.Time
}

// NewStore returns a store in table (the catalog table).
func NewStore(api DynamoAPI, table string) *Store {
	return &Store{api: api, table: table, now: time.Now}
}

type item struct {
	Document string `dynamodbav:"document"`
	SHA256   string `dynamodbav:"sha256"`
	SetAt    string `dynamodbav:"set_at"`
}

// Put sets catalog id's policy to doc after checking it compiles (the
// error wraps ErrInvalid): calls see it from their next lookup on.
func (s *Store) Put(ctx context.Context, id string, doc []byte) error {
	if err := catalog.ValidateID(id); err != nil {
		return err
	}
	if _, err := Parse(doc); err != nil {
		return err
	}
	sum := sha256.Sum256(doc)
	av, err := attributevalue.MarshalMap(item{Document: string(doc), SHA256: hex.EncodeToString(sum[:]), SetAt: s.now().UTC().Format(time.RFC3339)})
	if err != nil {
		return fmt.Errorf("policy: encode: %w", err)
	}
	for k, v := range key(id) {
		av[k] = v
	}
	if _, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return fmt.Errorf("policy: set the policy of %q: %w", id, err)
	}
	return nil
}

// Get returns catalog id's policy document as set, or nil when it has
// none. The read is consistent: a policy just set applies at once.
func (s *Store) Get(ctx context.Context, id string) ([]byte, error) {
	if err := catalog.ValidateID(id); err != nil {
		return nil, err
	}
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("policy: read the policy of %q: %w", id, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	var it item
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("policy: the policy of %q: %w", id, err)
	}
	return []byte(it.Document), nil
}

// Delete removes catalog id's policy: its calls are allowed as without one.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := catalog.ValidateID(id); err != nil {
		return err
	}
	if _, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(id)}); err != nil {
		return fmt.Errorf("policy: delete the policy of %q: %w", id, err)
	}
	return nil
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: id},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: SortKey},
	}
}
