// Package catalogtest helps test code that uses package catalog: stores on
// a local moto server, a checker for DynamoDB limits moto does not enforce,
// and the behavioural suite every catalog store passes.
package catalogtest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

// NewTable creates a catalog table with a unique name on m and returns a
// client for m and the table's name.
func NewTable(tb testing.TB, m *awstest.Moto) (*dynamodb.Client, string) {
	tb.Helper()
	return awstest.NewTable(tb, m, "catalog", catalog.CreateTable)
}

// NewDynamo returns a store in a fresh table on m whose client is wrapped
// in Strict.
func NewDynamo(tb testing.TB, m *awstest.Moto, opts ...catalog.DynamoOption) *catalog.Dynamo {
	tb.Helper()
	client, table := NewTable(tb, m)
	return catalog.NewDynamo(Strict(tb, client), table, opts...)
}

// NewSealer creates a KMS key on m and returns a catalog.KMS over it, its
// client configured for m.
func NewSealer(tb testing.TB, m *awstest.Moto) catalog.KMS {
	tb.Helper()
	ctx := context.Background()
	client := kms.NewFromConfig(m.Config(ctx))
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("catalogtest " + tb.Name())})
	if err != nil {
		tb.Fatalf("create a KMS key on moto: %v", err)
	}
	return catalog.KMS{API: client, KeyID: aws.ToString(out.KeyMetadata.KeyId)}
}
