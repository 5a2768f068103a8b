// Package catalogtest helps test code that uses package catalog: stores on
// a local moto server, a checker for DynamoDB limits moto does not enforce,
// and the behavioural suite every catalog store passes.
package catalogtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// TableBytes returns every item of table as a reader of the table (or of a
// backup) sees it: each attribute's name and its value's own bytes (a
// string's text, a binary's bytes), one a line.
func TableBytes(tb testing.TB, client *dynamodb.Client, table string) []byte {
	tb.Helper()
	var all bytes.Buffer
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		for _, it := range out.Items {
			for k, v := range it {
				fmt.Fprintf(&all, "%s=%s\n", k, attrBytes(v))
			}
		}
	}
	return all.Bytes()
}

func attrBytes(v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return []byte(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	case *types.AttributeValueMemberL:
		var b []byte
		for _, e := range v.Value {
			b = append(append(b, attrBytes(e)...), ',')
		}
		return b
	case *types.AttributeValueMemberM:
		var b []byte
		for k, e := range v.Value {
			b = append(append(append(append(b, k...), '='), attrBytes(e)...), ',')
		}
		return b
	}
	return fmt.Append(nil, v)
}
