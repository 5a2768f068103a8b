package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// TestStaleBurstEnqueuesOneRediscovery: a catalog lists a tool the server
// has since renamed; a burst of 20 calls to the old name through the real
// call binary each get the server's refusal as their tool_result, and the
// discover queue gets exactly one re-discovery of the catalog.
func TestStaleBurstEnqueuesOneRediscovery(t *testing.T) {
	server := startExampleServer(t, false)
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, server)}})
	d := catalog.Discovery{
		Listing:         mcp.Listing{Tools: []mcp.Tool{catalogtest.Tool("calculate_v1", "before the rename")}},
		ProtocolVersion: "2025-11-25", // the example server's, so only the rename is stale
		ServerName:      "mcpfn-example",
		StartedAt:       time.Now(),
		Schedule:        &catalog.Schedule{ServerURL: server},
	}
	if _, err := s.store.Put(t.Context(), "renamed", d); err != nil {
		t.Fatal(err)
	}
	// The dedup window is a minute; 20 invocations take a second or two.
	var outcomes []string
	for i := range 20 {
		res := invoke(t, s.call, mustJSON(t, map[string]any{
			"server_url": server, "tool_name": "calculate_v1", "catalog_id": "renamed",
			"tool_use_id": "toolu_burst" + strconv.Itoa(i), "arguments": map[string]any{},
		}))
		if res.ErrorType != "" {
			t.Fatalf("call %d: %s: %s", i, res.ErrorType, res.ErrorMessage)
		}
		var tr toolResult
		decode(t, res.Payload, &tr)
		if !tr.IsError || len(tr.Content) == 0 || !strings.Contains(tr.Content[0].Text, "unknown tool") {
			t.Errorf("call %d: %s, want the server's unknown-tool refusal", i, res.Payload)
		}
		outcomes = append(outcomes, rediscovery(res.Logs))
	}
	bodies := s.drain(t, s.discoverQueue)
	want := []string{string(mustJSON(t, map[string]any{"catalog_id": "renamed"}))} // the URL stays sealed
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("discover queue (-want +got):\n%s", diff)
	}
	if outcomes[0] != "requested" || slices.ContainsFunc(outcomes[1:], func(o string) bool { return o != "deduplicated" }) {
		t.Errorf("rediscovery on the summary lines %v, want requested then deduplicated", outcomes)
	}
}

// rediscovery is the rediscovery field of an invocation's summary line.
func rediscovery(logs []string) string {
	for _, l := range logs {
		var line struct {
			Msg         string `json:"msg"`
			Rediscovery string `json:"rediscovery"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "work item" {
			return line.Rediscovery
		}
	}
	return ""
}

// TestSweepEventEnqueuesDueCatalogs discovers four catalogs through the
// real discover binary, makes two of them due (their next_due set in the
// past, as an hour passing would), takes one off the schedule, and invokes
// discover with events/discover-sweep.json: the two due catalogs are
// enqueued once, in the discover request shape, which discover accepts.
func TestSweepEventEnqueuesDueCatalogs(t *testing.T) {
	server := startExampleServer(t, false)
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, server)}})
	for _, req := range []map[string]any{
		{"catalog_id": "due-a", "server_url": server},
		{"catalog_id": "due-b", "server_url": server, "refresh_interval_seconds": 600},
		{"catalog_id": "not-due", "server_url": server},
		{"catalog_id": "off", "server_url": server, "refresh_interval_seconds": 0},
	} {
		if res := invoke(t, s.discover, mustJSON(t, req)); res.ErrorType != "" {
			t.Fatalf("discover %v: %s: %s", req["catalog_id"], res.ErrorType, res.ErrorMessage)
		}
	}
	db := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(t.Context()))
	for _, id := range []string{"due-a", "due-b", "off"} {
		_, err := db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
			TableName: aws.String(s.catalogTable),
			Key: map[string]types.AttributeValue{
				catalog.PartitionKey: &types.AttributeValueMemberS{Value: id},
				catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
			},
			UpdateExpression:          aws.String("SET #nd = :past"),
			ExpressionAttributeNames:  map[string]string{"#nd": catalog.NextDueAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)}},
		})
		if err != nil {
			t.Fatalf("make %s due: %v", id, err)
		}
	}
	// "off" now has a next_due but no due_shard: it is not in the index.
	sweep, err := os.ReadFile("../events/discover-sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	res := invoke(t, s.discover, sweep)
	if got := strings.TrimSpace(string(res.Payload)); res.ErrorType != "" || got != `{"swept":{"due":2,"enqueued":2,"backing_off":0}}` {
		t.Fatalf("sweep: %s %s %s, want 2 due and enqueued", res.ErrorType, res.ErrorMessage, res.Payload)
	}
	bodies := s.drain(t, s.discoverQueue)
	slices.Sort(bodies)
	want := []string{
		string(mustJSON(t, map[string]any{"catalog_id": "due-a"})),
		string(mustJSON(t, map[string]any{"catalog_id": "due-b"})),
	}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("discover queue (-want +got):\n%s", diff)
	}
	if again := invoke(t, s.discover, sweep); strings.TrimSpace(string(again.Payload)) != `{"swept":{"due":0,"enqueued":0,"backing_off":0}}` {
		t.Errorf("a second sweep: %s %s, want nothing due (claimed)", again.ErrorType, again.Payload)
	}
	// What the sweep enqueued is a discover request, as an SQS record body.
	if got := batchFailures(t, invoke(t, s.discover, sqsEvent(t, json.RawMessage(bodies[0]), json.RawMessage(bodies[1])))); len(got) != 0 {
		t.Errorf("discovering the enqueued requests: batch item failures %v", got)
	}
	c, err := s.store.Get(t.Context(), "due-b")
	if err != nil || c.RefreshInterval != 10*time.Minute || !c.NextDue.After(time.Now()) {
		t.Errorf("due-b after its re-discovery: interval %v, next due %v (%v); want 10m kept, due in the future", c.RefreshInterval, c.NextDue, err)
	}
}
