package localstack

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		name := UniqueName("table")
		if !strings.HasPrefix(name, "table-") || seen[name] {
			t.Fatalf("UniqueName = %q: repeated, or not after the prefix", name)
		}
		seen[name] = true
	}
}

func TestNewTable(t *testing.T) {
	create := func(ctx context.Context, db *dynamodb.Client, name string) error {
		_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		})
		return err
	}
	db, name, err := NewTable(t.Context(), startMoto(t), "items", create)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "items-") {
		t.Errorf("table %q, want a UniqueName of items", name)
	}
	if _, err := db.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}); err != nil {
		t.Errorf("DescribeTable(%s): %v", name, err)
	}
}

func TestStartMotoServesDynamoDBAndResets(t *testing.T) {
	ctx := context.Background()
	m := startMoto(t)
	db := dynamodb.NewFromConfig(m.Config(ctx))
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("t"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	if got := tableCount(t, db); got != 1 {
		t.Fatalf("tables before reset = %d, want 1", got)
	}
	if err := m.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tableCount(t, db); got != 0 {
		t.Fatalf("tables after reset = %d, want 0", got)
	}
}

func TestStopEndsTheServer(t *testing.T) {
	m, err := StartMoto()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if resp, err := http.Get(m.Endpoint() + "/moto-api/"); err == nil {
		resp.Body.Close()
		t.Fatalf("server still answers after Stop: %s", resp.Status)
	}
}

func TestStartWithoutInterpreterFailsClearly(t *testing.T) {
	saved := interpreters
	t.Cleanup(func() { interpreters = saved })
	interpreters = []string{"python-does-not-exist-mcpfn"}

	_, err := StartMoto()
	if err == nil {
		t.Fatal("StartMoto succeeded without an interpreter")
	}
	for _, want := range []string{"pip install", "python-does-not-exist-mcpfn: not on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEnvironNamesTheEndpoint(t *testing.T) {
	m := &Moto{endpoint: "http://127.0.0.1:1"}
	env := strings.Join(m.Environ(), "\n")
	for _, want := range []string{"AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test"} {
		if !strings.Contains(env, want) {
			t.Errorf("Environ lacks %q:\n%s", want, env)
		}
	}
}

func tableCount(t *testing.T, db *dynamodb.Client) int {
	t.Helper()
	out, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	return len(out.TableNames)
}
