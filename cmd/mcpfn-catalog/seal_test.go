package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// TestGetSealedAndMissing reads from moto: a catalog whose server URL
// carries a key in its path and query prints the origin only; a catalog
// whose version item is gone fails naming the catalog and the version.
// It sets the environment, so it does not run in parallel.
func TestGetSealedAndMissing(t *testing.T) {
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	s := catalog.NewDynamo(client, table, catalog.WithSealer(catalogtest.NewSealer(t, m)))
	d := catalogtest.Discover(listing(), 0)
	d.Schedule = &catalog.Schedule{ServerURL: "https://mcp.example.com/mcp/sk-canary-path?key=sk-canary-query"}
	catalogtest.MustPut(t, s, "sealed", d)
	gone := catalogtest.MustPut(t, s, "gone", catalogtest.Discover(listing(), 0))
	_, err := client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		catalog.PartitionKey: &types.AttributeValueMemberS{Value: "gone"},
		catalog.SortKey:      &types.AttributeValueMemberS{Value: "v#" + gone.Version},
	}})
	if err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": awstest.Region, "AWS_ACCESS_KEY_ID": awstest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": awstest.SecretAccessKey,
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_PROFILE": "", "AWS_ENDPOINT_URL": "",
		"AWS_ENDPOINT_URL_DYNAMODB": "",
	} {
		t.Setenv(k, v)
	}
	store := []string{"--table", table, "--endpoint", m.Endpoint()}

	out := string(mustRun(t, append(append([]string{"get"}, store...), "sealed")...))
	if strings.Contains(out, "sk-canary") {
		t.Errorf("get prints the server URL's path or query:\n%s", out)
	}
	if !strings.Contains(out, `"origin": "https://mcp.example.com"`) && !strings.Contains(out, `"origin":"https://mcp.example.com"`) {
		t.Errorf("get does not print the server's origin:\n%s", out)
	}

	code, _, stderr := cmd(t, nil, append(append([]string{"get"}, store...), "gone")...)
	if code != exitFail || !strings.Contains(stderr, `"gone"`) || !strings.Contains(stderr, gone.Version) || strings.Contains(stderr, "changed") {
		t.Errorf("get of a catalog without its version item: exit %d, stderr %q; want the catalog and version named", code, stderr)
	}
}
