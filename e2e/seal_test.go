package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// Canary keys of a hosted MCP URL: one in the path, one in the query.
const (
	canaryPath  = "/mcp/sk-canary-path-5e1d"
	canaryQuery = "api_key=sk-canary-query-c07a"
)

var canaries = []string{"sk-canary-path-5e1d", "sk-canary-query-c07a"}

// TestSealedServerURL discovers a server whose URL carries a key in its
// path and query through the real discover binary, makes the catalog due,
// sweeps, and makes a call find it stale: no table item (scanned raw) and
// neither re-discovery message holds the key, and discover re-discovers
// the catalog from the message alone, opening the sealed URL.
func TestSealedServerURL(t *testing.T) {
	h, counters := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	mux.Handle(canaryPath, h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	server := ts.URL + canaryPath + "?" + canaryQuery
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, ts.URL)}})
	ctx := t.Context()

	if res := invoke(t, s.discover, mustJSON(t, map[string]any{"catalog_id": "sealed", "server_url": server})); res.ErrorType != "" {
		t.Fatalf("discover: %s: %s", res.ErrorType, res.ErrorMessage)
	}
	db := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(ctx))
	_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.catalogTable),
		Key: map[string]types.AttributeValue{
			catalog.PartitionKey: &types.AttributeValueMemberS{Value: "sealed"},
			catalog.SortKey:      &types.AttributeValueMemberS{Value: catalog.HeadSortKey},
		},
		UpdateExpression:          aws.String("SET #nd = :past"),
		ExpressionAttributeNames:  map[string]string{"#nd": catalog.NextDueAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := os.ReadFile("../events/discover-sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	if res := invoke(t, s.discover, sweep); !strings.Contains(string(res.Payload), `"enqueued":1`) {
		t.Fatalf("sweep: %s %s %s, want one enqueued", res.ErrorType, res.ErrorMessage, res.Payload)
	}
	swept := s.drain(t, s.discoverQueue)
	res := invoke(t, s.call, mustJSON(t, map[string]any{
		"server_url": server, "tool_name": "not-in-the-catalog", "catalog_id": "sealed",
		"tool_use_id": "toolu_sealed", "arguments": map[string]any{},
	}))
	if got := rediscovery(res.Logs); got != "requested" {
		t.Fatalf("the stale call's rediscovery %q, want requested (%s %s)", got, res.ErrorType, res.ErrorMessage)
	}
	stale := s.drain(t, s.discoverQueue)
	if len(swept) != 1 || len(stale) != 1 {
		t.Fatalf("messages: swept %q, stale %q; want one each", swept, stale)
	}

	stored := catalogtest.TableBytes(t, db, s.catalogTable)
	for _, c := range canaries {
		if bytes.Contains(stored, []byte(c)) {
			t.Errorf("the catalog table holds %q in the clear", c)
		}
		for _, m := range append(swept, stale...) {
			if strings.Contains(m, c) || strings.Contains(m, "server_url") {
				t.Errorf("a re-discovery message carries the URL: %s", m)
			}
		}
	}

	before := counters.Requests()
	res = invoke(t, s.discover, sqsEvent(t, json.RawMessage(swept[0]), json.RawMessage(stale[0])))
	if got := batchFailures(t, res); len(got) != 0 {
		t.Fatalf("re-discovering from the messages: batch item failures %v\n%s", got, strings.Join(res.Logs, "\n"))
	}
	if counters.Requests() == before {
		t.Error("the re-discoveries sent the server nothing")
	}
	c, err := s.store.Get(ctx, "sealed")
	if err != nil || len(c.Tools) == 0 || c.ServerOrigin != ts.URL {
		t.Fatalf("catalog after re-discovery: %+v, %v; want tools and origin %s", c, err, ts.URL)
	}
	logs := strings.Join(res.Logs, "\n")
	for _, c := range canaries {
		if strings.Contains(logs, c) {
			t.Errorf("the re-discovery logged %q", c)
		}
	}
}
