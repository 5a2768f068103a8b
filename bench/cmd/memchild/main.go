// Command memchild runs one MCP work item (connect, list, close) against a
// URL through shared/mcp or the raw go-sdk client, for a parent that
// measures its peak RSS with /usr/bin/time -v. It samples its own heap
// (live heap objects, every 2 ms) and prints lines to stdout:
//
//	heap BYTES                       each time the peak grows by 16 MiB
//	done ELAPSED_NS PEAK_BYTES ERROR the outcome; ERROR is "ok" or the error
//
// Usage: memchild -client shared/mcp|go-sdk -url URL
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

const heapMetric = "/memory/classes/heap/objects:bytes"

func main() {
	client := flag.String("client", string(item.Ours), "shared/mcp or go-sdk")
	url := flag.String("url", "", "MCP endpoint on loopback")
	timeout := flag.Duration("timeout", 10*time.Minute, "context deadline of the work item")
	flag.Parse()

	hc, err := mcptest.LoopbackClient(*url, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "memchild:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // serialises stdout lines
	stop := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: heapMetric}}
		var peak, printed uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
				if peak >= printed+16<<20 {
					printed = peak
					mu.Lock()
					fmt.Printf("heap %d\n", peak)
					mu.Unlock()
				}
			}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	err = item.Run(ctx, item.Client(*client), item.Spec{URL: *url, HTTPClient: hc})
	elapsed := time.Since(start)
	close(stop)
	peak := <-sampled
	outcome := "ok"
	if err != nil {
		outcome = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	mu.Lock()
	fmt.Printf("done %d %d %s\n", elapsed.Nanoseconds(), peak, outcome)
	mu.Unlock()
}
