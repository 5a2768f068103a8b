package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// heapPeak samples the live heap (after a GC) at every request and in a
// loop, and keeps the largest.
type heapPeak struct {
	catalog.DynamoAPI
	mu   sync.Mutex
	peak uint64
}

func (h *heapPeak) sample() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.mu.Lock()
	h.peak = max(h.peak, m.HeapAlloc)
	h.mu.Unlock()
}

func (h *heapPeak) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	h.sample()
	return h.DynamoAPI.BatchWriteItem(ctx, in, o...)
}

func (h *heapPeak) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	h.sample()
	return h.DynamoAPI.UpdateItem(ctx, in, o...)
}

// during samples in a loop while f runs.
func (h *heapPeak) during(f func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				h.sample()
			}
		}
	})
	f()
	close(done)
	wg.Wait()
}

// memListing is n tools of about total bytes together.
func memListing(n, total int) (mcp.Listing, int) {
	pad := strings.Repeat("p", total/n-len(`{"type":"object","properties":{"p":{"type":"string","description":""}}}`)-len("tool-00000")-len("tool 0000"))
	l := mcp.Listing{Tools: make([]mcp.Tool, n)}
	size := 0
	for i := range n {
		t := mcp.Tool{
			Name:        fmt.Sprintf("tool-%05d", i),
			Description: fmt.Sprintf("tool %d", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"` + pad + `"}}}`),
		}
		l.Tools[i] = t
		size += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return l, size
}

// TestPutMemory measures the live heap a Put of an 8,000-tool, 7.6 MB
// catalog adds at its peak, beyond the listing itself: a first Put and a
// replacing one, which deletes the old version. It runs alone (not
// parallel), so the heap is this test's.
func TestPutMemory(t *testing.T) {
	l, size := memListing(8000, 7_600_000)
	for _, tc := range []struct {
		name string
		new  func(t *testing.T, h *heapPeak) catalog.Store
	}{
		{"dynamo", func(t *testing.T, h *heapPeak) catalog.Store {
			client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
			h.DynamoAPI = client
			return catalog.NewDynamo(h, table)
		}},
		{"dir", func(t *testing.T, h *heapPeak) catalog.Store {
			s, err := catalog.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &heapPeak{}
			s := tc.new(t, h)
			for round, offset := range []time.Duration{0, time.Minute} { // a first Put, then a replacing one
				l.Tools[0].Description = fmt.Sprintf("round %d", round)
				h.mu.Lock()
				h.peak = 0
				h.mu.Unlock()
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				base := m.HeapAlloc
				h.during(func() { catalogtest.MustPut(t, s, "mem", catalogtest.Discover(l, offset)) })
				extra := int64(h.peak) - int64(base)
				t.Logf("%s put %d: catalog %.1f MB, peak live heap beyond it %.1f MB (%.2f×)", tc.name, round, float64(size)/1e6, float64(extra)/1e6, float64(extra)/float64(size))
				if extra > int64(size) { // measured 0.4–0.65×; 1.0× (dynamo) and 3.2× (dir) when whole versions were built first
					t.Errorf("%s put %d: peak live heap grew by %d bytes for a %d-byte catalog, want at most the catalog's size", tc.name, round, extra, size)
				}
			}
		})
	}
}
