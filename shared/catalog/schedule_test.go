package catalog_test

import (
	"context"
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

// scheduleOf is the schedule fields Get reports.
type scheduleOf struct {
	Origin   string
	VaultIDs []string
	Interval time.Duration
	NextDue  time.Time
}

func getSchedule(t *testing.T, s catalog.Store, id string) scheduleOf {
	t.Helper()
	c := catalogtest.MustGet(t, s, id)
	return scheduleOf{c.ServerOrigin, c.VaultIDs, c.RefreshInterval, c.NextDue}
}

func TestPutRecordsTheSchedule(t *testing.T) {
	t.Parallel()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	s := catalog.NewDynamo(client, table)
	const id, url = "sched", "https://mcp.example.com/mcp"
	put := func(l int, offset time.Duration, iv *time.Duration) time.Time {
		d := catalogtest.Discover(catalogtest.Listing(l, "a"), offset)
		d.Schedule = &catalog.Schedule{ServerURL: url, VaultIDs: []string{"v1", "v2"}, Interval: iv}
		catalogtest.MustPut(t, s, id, d)
		return d.StartedAt.Truncate(time.Second)
	}
	dur := func(d time.Duration) *time.Duration { return &d }

	started := put(2, 0, nil) // new catalog: the default interval
	want := scheduleOf{"https://mcp.example.com", []string{"v1", "v2"}, catalog.DefaultRefreshInterval, started.Add(time.Hour).UTC()}
	if diff := cmp.Diff(want, getSchedule(t, s, id)); diff != "" {
		t.Errorf("new catalog (-want +got):\n%s", diff)
	}
	started = put(2, time.Minute, dur(90*time.Second)) // unchanged, a new interval
	want.Interval, want.NextDue = 90*time.Second, started.Add(90*time.Second).UTC()
	if diff := cmp.Diff(want, getSchedule(t, s, id)); diff != "" {
		t.Errorf("unchanged with an interval (-want +got):\n%s", diff)
	}
	assertIndexed(t, client, table, id, true)
	started = put(3, 2*time.Minute, nil) // changed, the recorded interval kept
	want.NextDue = started.Add(90 * time.Second).UTC()
	if diff := cmp.Diff(want, getSchedule(t, s, id)); diff != "" {
		t.Errorf("changed without an interval (-want +got):\n%s", diff)
	}
	put(3, 3*time.Minute, dur(0)) // off the schedule
	want.Interval, want.NextDue = 0, time.Time{}
	if diff := cmp.Diff(want, getSchedule(t, s, id)); diff != "" {
		t.Errorf("off the schedule (-want +got):\n%s", diff)
	}
	assertIndexed(t, client, table, id, false)
	catalogtest.MustPut(t, s, id, catalogtest.Discover(catalogtest.Listing(4, "a"), 4*time.Minute)) // no schedule: kept
	if diff := cmp.Diff(want, getSchedule(t, s, id)); diff != "" {
		t.Errorf("a put without a schedule (-want +got):\n%s", diff)
	}
}

// assertIndexed checks whether id's head is in the due index.
func assertIndexed(t *testing.T, client *dynamodb.Client, table, id string, want bool) {
	t.Helper()
	out, err := client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                aws.String(table),
		IndexName:                aws.String(catalog.DueIndex),
		KeyConditionExpression:   aws.String("#s = :s"),
		ExpressionAttributeNames: map[string]string{"#s": catalog.DueShardAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: catalog.DueShard(id)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := false
	for _, it := range out.Items {
		if v, ok := it[catalog.PartitionKey].(*types.AttributeValueMemberS); ok && v.Value == id {
			got = true
			if _, ok := it[catalog.VaultIDsAttribute]; !ok {
				t.Errorf("index entry without %s: %v", catalog.VaultIDsAttribute, it)
			}
		}
	}
	if got != want {
		t.Errorf("head of %q in the due index: %v, want %v", id, got, want)
	}
}

func TestCreateTableAddsTheDueIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := awstest.SharedMoto(t)
	client := dynamodb.NewFromConfig(m.Config(ctx), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(m.Endpoint()) })
	table := awstest.UniqueName("olddue")
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{ // as CreateTable made it before the index
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	assertDueIndex(t, client, table)
}

// assertDueIndex checks table's due index against docs/catalog.md.
func assertDueIndex(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	d, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range d.Table.GlobalSecondaryIndexes {
		if aws.ToString(ix.IndexName) != catalog.DueIndex {
			continue
		}
		var keys []string
		for _, k := range ix.KeySchema {
			keys = append(keys, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		if diff := cmp.Diff([]string{"due_shard HASH", "next_due RANGE"}, keys); diff != "" {
			t.Errorf("due index keys (-want +got):\n%s", diff)
		}
		if p := ix.Projection; p == nil || p.ProjectionType != types.ProjectionTypeInclude ||
			!cmp.Equal(p.NonKeyAttributes, catalog.DueIndexProjection) {
			t.Errorf("due index projection %+v, want INCLUDE %v", p, catalog.DueIndexProjection)
		}
		return
	}
	t.Errorf("table %s has no index %q", table, catalog.DueIndex)
}
