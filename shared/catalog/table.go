package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table layout (docs/catalog.md). Both keys are strings; TTLAttribute holds
// epoch seconds.
const (
	PartitionKey = "pk"
	SortKey      = "sk"
	TTLAttribute = "expires_at"
	HeadSortKey  = "head"
)

// TableAPI is the part of *dynamodb.Client CreateTable uses.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// CreateTable creates table as template.yaml defines it: PartitionKey
// (hash) and SortKey (range), both strings, on-demand billing, TTL on
// TTLAttribute, and the sparse DueIndex. It waits until the table is
// active and succeeds when the table already exists, adding DueIndex to
// a table created before it.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: attributeDefinitions(),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(SortKey), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{dueIndex()},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("catalog: create table %s: %w", table, err)
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	if err := ensureDueIndex(ctx, client, table); err != nil {
		return err
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("catalog: describe TTL of %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == types.TimeToLiveStatusEnabled &&
		aws.ToString(d.AttributeName) == TTLAttribute {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("catalog: enable TTL on %s: %w", table, err)
	}
	return nil
}

func attributeDefinitions() []types.AttributeDefinition {
	return []types.AttributeDefinition{
		{AttributeName: aws.String(PartitionKey), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(SortKey), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(DueShardAttribute), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(NextDueAttribute), AttributeType: types.ScalarAttributeTypeN},
	}
}

// ensureDueIndex adds DueIndex to table when it lacks it and waits until
// the table is active again.
func ensureDueIndex(ctx context.Context, client TableAPI, table string) error {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("catalog: describe table %s: %w", table, err)
	}
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(ix.IndexName) == DueIndex {
			return nil
		}
	}
	ix := dueIndex()
	_, err = client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: attributeDefinitions(),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: ix.IndexName, KeySchema: ix.KeySchema, Projection: ix.Projection,
		}}},
	})
	if err != nil {
		return fmt.Errorf("catalog: add index %s to %s: %w", DueIndex, table, err)
	}
	return waitActive(ctx, client, table)
}

// TableWait bounds how long CreateTable waits for the table to be active,
// once after creating it and once after adding DueIndex.
const TableWait = 10 * time.Minute

// waitActive waits with the SDK's waiter, polling every 200 ms to 5 s.
func waitActive(ctx context.Context, client TableAPI, table string) error {
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, 5*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, TableWait); err != nil {
		return fmt.Errorf("catalog: table %s not active: %w", table, err)
	}
	return nil
}

// Attribute readers: the value of an attribute of the type, else zero.

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func binaryAttr(item map[string]types.AttributeValue, name string) []byte {
	if v, ok := item[name].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func numberAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
