package ledgertest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/ledger"
)

// NewTable creates a ledger table with a unique name on m and returns a
// client for m and the table's name.
func NewTable(tb testing.TB, m *awstest.Moto) (*dynamodb.Client, string) {
	tb.Helper()
	ctx := context.Background()
	client := dynamodb.NewFromConfig(m.Config(ctx))
	name := awstest.UniqueName("ledger")
	if err := ledger.CreateTable(ctx, client, name); err != nil {
		tb.Fatalf("ledgertest: %v", err)
	}
	return client, name
}
