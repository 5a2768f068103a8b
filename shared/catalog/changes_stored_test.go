package catalog_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestChangesAreStoredNatively: Put records the diff as a native map in
// the head, and a head whose changes are the binary framing of versions
// stored before still reads, with the same diff.
func TestChangesAreStoredNatively(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(catalogtest.Strict(t, client), table)
	a := catalogtest.Listing(5, "a")
	b := catalogtest.Listing(5, "a")
	b.Tools = slices.Delete(slices.Clone(b.Tools), 0, 1)
	b.Tools[0] = catalogtest.Tool(b.Tools[0].Name, "b")
	catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
	res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Minute))
	want := catalogtest.ChangesOf(nil, []string{a.Tools[0].Name}, []string{b.Tools[0].Name})

	ctx := context.Background()
	key := map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: "id"},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := out.Item["changes"].(*types.AttributeValueMemberM); !ok {
		t.Fatalf("stored changes are %T, want a map", out.Item["changes"])
	} else if l, ok := v.Value["removed"].(*types.AttributeValueMemberL); !ok || len(l.Value) != 1 {
		t.Errorf("stored removed list %#v, want one name", v.Value["removed"])
	}
	catalogtest.AssertChanges(t, s, "id", res, want, catalogtest.T0.Add(time.Minute))

	if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key,
		UpdateExpression:          aws.String("SET changes = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberB{Value: catalog.OldChanges(want)}},
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, catalogtest.MustGet(t, s, "id").Changes); diff != "" {
		t.Errorf("changes stored as binary (-want +got):\n%s", diff)
	}
}
