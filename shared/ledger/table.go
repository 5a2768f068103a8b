package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableAPI is the part of *dynamodb.Client CreateTable uses.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// TableWait bounds how long CreateTable waits for the table to be active.
const TableWait = 2 * time.Minute

// CreateTable creates the ledger table (schema: package doc) with on-demand
// billing and TTL on TTLAttribute, waiting until it is active. An existing
// table is kept; its TTL is enabled if it is not.
func CreateTable(ctx context.Context, api TableAPI, table string) error {
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("ledger: create table %s: %w", table, err)
	}
	if err := dynamodb.NewTableExistsWaiter(api).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, TableWait); err != nil {
		return fmt.Errorf("ledger: wait for table %s: %w", table, err)
	}
	ttl, err := api.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("ledger: describe TTL of %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == TTLAttribute &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = api.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("ledger: enable TTL on %s: %w", table, err)
	}
	return nil
}
