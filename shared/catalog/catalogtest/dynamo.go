// Package catalogtest helps test code that uses package catalog: stores on
// a local moto server, a checker for DynamoDB limits moto does not enforce,
// and the behavioural suite every catalog store passes.
package catalogtest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
