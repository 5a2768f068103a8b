package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// BenchmarkOvershoot measures how long Connect, ListTools and CallTool run
// past a 100 ms deadline against a server that never answers, and how long
// Close then takes (its DELETE unanswered too). Metrics are per operation.
func BenchmarkOvershoot(b *testing.B) {
	const deadline = 100 * time.Millisecond
	overshoot := func(b *testing.B, op func(ctx context.Context) error) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		dl, _ := ctx.Deadline()
		if err := op(ctx); err == nil {
			b.Fatal("the operation succeeded against a silent server")
		}
		return time.Since(dl)
	}
	b.Run("Connect", func(b *testing.B) {
		u, _ := silentServer(b)
		client := loopback(b, u, 30*time.Second)
		var total time.Duration
		for b.Loop() {
			total += overshoot(b, func(ctx context.Context) error {
				_, err := Connect(ctx, Config{URL: u, HTTPClient: client})
				return err
			})
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "overshoot-ms/op")
	})
	for _, hang := range []string{"tools/list", "tools/call"} {
		b.Run(hang, func(b *testing.B) {
			s := serveScripted(b, &scripted{hang: map[string]bool{hang: true, methodCancelled: true, "DELETE": true}})
			client := loopback(b, s.URL, 30*time.Second)
			var over, closing time.Duration
			for b.Loop() {
				c, err := Connect(context.Background(), Config{URL: s.URL, HTTPClient: client})
				if err != nil {
					b.Fatal(err)
				}
				over += overshoot(b, func(ctx context.Context) error {
					if hang == "tools/list" {
						_, err := c.ListTools(ctx)
						return err
					}
					_, err := c.CallTool(ctx, "slow", nil)
					return err
				})
				start := time.Now()
				c.Close()
				closing += time.Since(start)
			}
			b.ReportMetric(float64(over.Milliseconds())/float64(b.N), "overshoot-ms/op")
			b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
		})
	}
}

// BenchmarkWorkItem runs one discovery-and-call work item (connect, list
// 3 pages, call, close) against go-sdk fixture servers of each era.
func BenchmarkWorkItem(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts mcptest.Options
	}{
		{"stateful", mcptest.Options{PageSize: 5, ExtraTools: 5}},
		{"stateless", mcptest.Options{Stateless: true, PageSize: 5, ExtraTools: 5}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := mcptest.NewServer(b, tc.opts)
			ctx := context.Background()
			for b.Loop() {
				c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client()})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.ListTools(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := c.CallTool(ctx, "echo", []byte(`{"text":"hi"}`)); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
