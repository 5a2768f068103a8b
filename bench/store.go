package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// StoreTools is the size of the store-cost catalog.
const StoreTools = 1000

// Counts is the DynamoDB traffic of one store operation: requests by API
// operation, and the items those requests wrote (puts and deletes).
type Counts struct {
	Requests     map[string]int
	ItemsWritten int
}

// Total returns the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// Writes returns the number of write requests (UpdateItem, BatchWriteItem).
func (c Counts) Writes() int { return c.Requests["UpdateItem"] + c.Requests["BatchWriteItem"] }

// CountingDynamo is a catalog.DynamoAPI that counts what passes through it.
// It is safe for concurrent use.
type CountingDynamo struct {
	Next catalog.DynamoAPI

	mu     sync.Mutex
	counts Counts
}

var _ catalog.DynamoAPI = (*CountingDynamo)(nil)

// Take returns the counts so far and resets them.
func (c *CountingDynamo) Take() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	if out.Requests == nil {
		out.Requests = map[string]int{}
	}
	c.counts = Counts{}
	return out
}

func (c *CountingDynamo) count(op string, items int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts.Requests == nil {
		c.counts.Requests = map[string]int{}
	}
	c.counts.Requests[op]++
	c.counts.ItemsWritten += items
}

// GetItem counts and forwards.
func (c *CountingDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count("GetItem", 0)
	return c.Next.GetItem(ctx, in, opts...)
}

// UpdateItem counts (one item written) and forwards.
func (c *CountingDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem", 1)
	return c.Next.UpdateItem(ctx, in, opts...)
}

// Query counts and forwards.
func (c *CountingDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.count("Query", 0)
	return c.Next.Query(ctx, in, opts...)
}

// BatchWriteItem counts (every put and delete in it) and forwards.
func (c *CountingDynamo) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	n := 0
	for _, reqs := range in.RequestItems {
		n += len(reqs)
	}
	c.count("BatchWriteItem", n)
	return c.Next.BatchWriteItem(ctx, in, opts...)
}

// StoreCase is one measured store operation.
type StoreCase struct {
	Name   string
	Counts Counts
	Result catalog.PutResult
}

// StoreCatalog returns a listing of n realistic tools; variant changes the
// description of the last one.
func StoreCatalog(n int, variant string) mcp.Listing {
	l := mcp.Listing{Tools: make([]mcp.Tool, n)}
	topics := []string{"invoice", "customer", "shipment", "ticket", "report", "calendar", "inventory", "payment"}
	for i := range l.Tools {
		topic := topics[i%len(topics)]
		schema, _ := json.Marshal(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":               map[string]any{"type": "string", "description": fmt.Sprintf("The %s id, e.g. %s-1234.", topic, topic)},
				"fields":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Fields to return; all when empty."},
				"include_archived": map[string]any{"type": "boolean", "default": false},
			},
			"required": []string{"id"},
		})
		l.Tools[i] = mcp.Tool{
			Name: fmt.Sprintf("%s_lookup_%04d", topic, i),
			Description: fmt.Sprintf("Looks up a %s record by id and returns its fields. "+
				"Use it when the user names a specific %s; it does not search.", topic, topic),
			InputSchema: schema,
		}
	}
	if variant != "" {
		l.Tools[n-1].Description += " " + variant
	}
	return l
}

// allChanged is l with every tool's description changed by variant.
func allChanged(l mcp.Listing, variant string) mcp.Listing {
	out := mcp.Listing{Tools: make([]mcp.Tool, len(l.Tools))}
	for i, t := range l.Tools {
		t.Description += " " + variant
		out.Tools[i] = t
	}
	return out
}

// StoreCost stores a StoreTools-tool catalog into a fresh table through
// client, then stores it again unchanged, then with one tool changed, then
// with every tool changed, and counts the requests of each Put.
func StoreCost(ctx context.Context, client *dynamodb.Client) ([]StoreCase, error) {
	table := fmt.Sprintf("bench-catalog-%d", time.Now().UnixNano())
	if err := catalog.CreateTable(ctx, client, table); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	counter := &CountingDynamo{Next: client}
	store := catalog.NewDynamo(counter, table)
	steps := []struct {
		name    string
		listing mcp.Listing
	}{
		{"store a 1,000-tool catalog", StoreCatalog(StoreTools, "")},
		{"re-store it unchanged", StoreCatalog(StoreTools, "")},
		{"store it with one tool changed", StoreCatalog(StoreTools, "(changed)")},
		{"store it with every tool changed", allChanged(StoreCatalog(StoreTools, "(changed)"), "(all)")},
	}
	var out []StoreCase
	start := time.Now()
	for i, s := range steps {
		res, err := store.Put(ctx, "bench", catalog.Discovery{
			Listing:         s.listing,
			ProtocolVersion: "2026-07-28",
			ServerName:      "bench",
			ServerVersion:   "1",
			StartedAt:       start.Add(time.Duration(i) * time.Second),
		})
		if err != nil {
			return nil, fmt.Errorf("store cost: %s: %w", s.name, err)
		}
		out = append(out, StoreCase{Name: s.name, Counts: counter.Take(), Result: res})
	}
	return out, nil
}
