package ledger_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/ledger"
)

func TestCreateTable(t *testing.T) {
	api, table := newTable(t)
	if err := ledger.CreateTable(t.Context(), api, table); err != nil {
		t.Fatalf("second CreateTable on an existing table: %v", err)
	}
	desc, err := api.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Key, KeyType, AttrType, Billing string
	}
	got := schema{
		Key:      aws.ToString(desc.Table.KeySchema[0].AttributeName),
		KeyType:  string(desc.Table.KeySchema[0].KeyType),
		AttrType: string(desc.Table.AttributeDefinitions[0].AttributeType),
	}
	if desc.Table.BillingModeSummary != nil {
		got.Billing = string(desc.Table.BillingModeSummary.BillingMode)
	}
	want := schema{Key: "pk", KeyType: "HASH", AttrType: "S", Billing: "PAY_PER_REQUEST"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	ttl, err := api.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; aws.ToString(d.AttributeName) != "expires_at" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL = %s on %q, want ENABLED on expires_at", d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
}

// TestItemSchema pins the item layout the package doc and template describe.
func TestItemSchema(t *testing.T) {
	api, table := newTable(t)
	clk := newClock()
	d := ledger.NewDynamo(api, table, lease)
	d.Now = clk.Now
	d.Retention = 48 * time.Hour
	ctx := t.Context()

	if _, err := d.Begin(ctx, "toolu_schema"); err != nil {
		t.Fatal(err)
	}
	running := getItem(t, api, table, "toolu_schema")
	owner := running["owner"]
	if len(owner) < 20 {
		t.Errorf("owner token %q: want a random token of at least 20 characters", owner)
	}
	delete(running, "owner")
	want := map[string]string{
		"pk":          "toolu_schema",
		"state":       "running",
		"lease_until": strconv.FormatInt(clk.Now().Add(lease).UnixMilli(), 10),
		"expires_at":  strconv.FormatInt(clk.Now().Add(48*time.Hour).Unix(), 10),
	}
	if diff := cmp.Diff(want, running); diff != "" {
		t.Errorf("running item (-want +got):\n%s", diff)
	}

	clk.Advance(10 * time.Second)
	if err := d.Complete(ctx, "toolu_schema", ledger.Outcome{ErrorType: "internal_error", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	done := getItem(t, api, table, "toolu_schema")
	want = map[string]string{
		"pk":         "toolu_schema",
		"state":      "done",
		"owner":      owner,
		"outcome":    `{"error_type":"internal_error","message":"m"}`,
		"expires_at": strconv.FormatInt(clk.Now().Add(48*time.Hour).Unix(), 10),
	}
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("done item (-want +got):\n%s", diff)
	}
}

// getItem reads an item as attribute name → string or number text.
func getItem(t *testing.T, api *dynamodb.Client, table, pk string) map[string]string {
	t.Helper()
	out, err := api.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string)
	for k, v := range out.Item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			m[k] = v.Value
		case *types.AttributeValueMemberN:
			m[k] = v.Value
		default:
			t.Errorf("attribute %s has type %T", k, v)
		}
	}
	return m
}

// flaky wraps a DynamoDB client: it fails the next failPuts PutItem calls and
// can hide the item of a failed condition check, as DynamoDB versions
// without ReturnValuesOnConditionCheckFailure do.
type flaky struct {
	*dynamodb.Client
	failPuts  atomic.Int32
	hideItem  bool
	getCalled atomic.Int32
}

var errThrottled = errors.New("throttled")

func (f *flaky) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.failPuts.Add(-1) >= 0 {
		return nil, errThrottled
	}
	out, err := f.Client.PutItem(ctx, in, opts...)
	var failed *types.ConditionalCheckFailedException
	if f.hideItem && errors.As(err, &failed) {
		return nil, &types.ConditionalCheckFailedException{Message: failed.Message}
	}
	return out, err
}

func (f *flaky) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.getCalled.Add(1)
	return f.Client.GetItem(ctx, in, opts...)
}

func TestTransientFailures(t *testing.T) {
	api, table := newTable(t)
	f := &flaky{Client: api}
	d := ledger.NewDynamo(f, table, lease)

	f.failPuts.Store(1)
	_, err := d.Begin(t.Context(), "k")
	if !errors.Is(err, errThrottled) || errors.Is(err, ledger.ErrInProgress) {
		t.Fatalf("Begin on a failing table: %v, want the dependency's error", err)
	}
	if _, err := d.Begin(t.Context(), "k"); err != nil {
		t.Fatalf("Begin after the failure: %v", err)
	}
	f.failPuts.Store(1)
	if err := d.Complete(t.Context(), "k", outcome); !errors.Is(err, errThrottled) {
		t.Fatalf("Complete on a failing table: %v, want the dependency's error", err)
	}
	if err := d.Complete(t.Context(), "k", outcome); err != nil {
		t.Fatalf("Complete retried after a transient failure: %v (the lease must survive it)", err)
	}
}

func TestBeginWithoutItemOnConditionFailure(t *testing.T) {
	api, table := newTable(t)
	f := &flaky{Client: api, hideItem: true}
	a, b := ledger.NewDynamo(f, table, lease), ledger.NewDynamo(f, table, lease)
	if _, err := a.Begin(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	_, err := b.Begin(t.Context(), "k")
	if !errors.Is(err, ledger.ErrInProgress) {
		t.Fatalf("Begin while leased: %v, want ErrInProgress", err)
	}
	if err := a.Complete(t.Context(), "k", outcome); err != nil {
		t.Fatal(err)
	}
	got, err := b.Begin(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ledger.Entry{Done: true, Outcome: outcome}, got); diff != "" {
		t.Errorf("Begin after Complete (-want +got):\n%s", diff)
	}
	if n := f.getCalled.Load(); n != 2 {
		t.Errorf("GetItem called %d times, want 2 (once per refused Begin)", n)
	}
}
