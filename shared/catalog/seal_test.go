package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// canaryURL carries a key in its path and in its query, as hosted MCP
// URLs do.
const canaryURL = "https://mcp.example.com:8443/mcp/sk-canary-path-7f3a?api_key=sk-canary-query-91bd"

func TestSealedServerURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	s := catalog.NewDynamo(client, table, catalog.WithSealer(catalogtest.NewSealer(t, m)))
	d := catalogtest.Discover(catalogtest.Listing(2, "a"), 0)
	d.Schedule = &catalog.Schedule{ServerURL: canaryURL, VaultIDs: []string{"team"}}
	catalogtest.MustPut(t, s, "sealed", d)

	raw := catalogtest.TableBytes(t, client, table)
	for _, canary := range []string{"sk-canary-path-7f3a", "sk-canary-query-91bd", "/mcp/"} {
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("the table holds %q in the clear", canary)
		}
	}
	if c := catalogtest.MustGet(t, s, "sealed"); c.ServerOrigin != "https://mcp.example.com:8443" {
		t.Errorf("ServerOrigin %q, want https://mcp.example.com:8443", c.ServerOrigin)
	}
	got, err := s.ServerURL(ctx, "sealed")
	if err != nil || got != canaryURL {
		t.Errorf("ServerURL = %q, %v; want the sealed URL", got, err)
	}
}

// TestSealedURLOpensOnlyUnderItsCatalog copies a head's sealed URL to
// another catalog's head: the encryption context refuses it there.
func TestSealedURLOpensOnlyUnderItsCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	sealer := catalogtest.NewSealer(t, m)
	s := catalog.NewDynamo(client, table, catalog.WithSealer(sealer))
	for _, id := range []string{"victim", "attacker"} {
		d := catalogtest.Discover(catalogtest.Listing(1, id), 0)
		d.Schedule = &catalog.Schedule{ServerURL: "https://" + id + ".example.com/mcp/" + id}
		catalogtest.MustPut(t, s, id, d)
	}
	head := func(id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			catalog.PartitionKey: &types.AttributeValueMemberS{Value: id},
			catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
		}
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: head("victim")})
	if err != nil {
		t.Fatal(err)
	}
	sealed := out.Item[catalog.SealedURLAttribute]
	if sealed == nil {
		t.Fatalf("the victim's head has no %s: %v", catalog.SealedURLAttribute, out.Item)
	}
	_, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: head("attacker"),
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": catalog.SealedURLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": sealed},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ServerURL(ctx, "attacker"); err == nil {
		t.Errorf("the victim's sealed URL opened under another catalog: %q", got)
	}
	if _, err := sealer.Open(ctx, "attacker", sealed.(*types.AttributeValueMemberB).Value); err == nil {
		t.Error("Open under another catalog id succeeded")
	}
	if got, err := s.ServerURL(ctx, "victim"); err != nil || got != "https://victim.example.com/mcp/victim" {
		t.Errorf("victim's ServerURL = %q, %v", got, err)
	}
}

// TestServerURLWithoutSealer: a store without a key keeps the origin only;
// a head from before sealing keeps its clear URL until its next Put.
func TestServerURLWithoutSealer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(client, table)
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		catalog.PartitionKey:       &types.AttributeValueMemberS{Value: "legacy"},
		catalog.SortKey:            &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
		catalog.ServerURLAttribute: &types.AttributeValueMemberS{Value: canaryURL},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ServerURL(ctx, "legacy"); err != nil || got != canaryURL {
		t.Errorf("legacy head: ServerURL = %q, %v; want its clear URL", got, err)
	}
	d := catalogtest.Discover(catalogtest.Listing(1, "a"), 0)
	d.Schedule = &catalog.Schedule{ServerURL: canaryURL}
	catalogtest.MustPut(t, s, "legacy", d)
	if bytes.Contains(catalogtest.TableBytes(t, client, table), []byte("sk-canary")) {
		t.Error("the clear URL is still in the table after a Put")
	}
	if _, err := s.ServerURL(ctx, "legacy"); !errors.Is(err, catalog.ErrNoServerURL) {
		t.Errorf("ServerURL without a key: %v, want ErrNoServerURL", err)
	}
	if c := catalogtest.MustGet(t, s, "legacy"); c.ServerOrigin != "https://mcp.example.com:8443" {
		t.Errorf("ServerOrigin %q", c.ServerOrigin)
	}
	if _, err := s.ServerURL(ctx, "nobody"); !errors.Is(err, catalog.ErrNoServerURL) {
		t.Errorf("ServerURL of a missing catalog: %v, want ErrNoServerURL", err)
	}
}
