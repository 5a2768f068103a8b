// Command listchild runs n work items (connect, list every tool, close)
// one after another against a URL through shared/mcp or the raw go-sdk
// client, for a parent that holds it to a CPU share (bench.CPUCgroup). For
// each item it prints one line to stdout:
//
//	list CPU_NS WALL_NS
//
// CPU is its own user + system time over the item, every thread
// (getrusage), so the process's start-up is not in it. An error goes to
// stderr with exit status 1.
//
// Usage: listchild -client shared/mcp|go-sdk -url URL [-n 2] [-tools N]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

func main() {
	client := flag.String("client", string(item.SDK), "shared/mcp or go-sdk")
	url := flag.String("url", "", "MCP endpoint on loopback")
	n := flag.Int("n", 2, "work items, one after another")
	tools := flag.Int("tools", 0, "tools each listing must hold (0: any number)")
	timeout := flag.Duration("timeout", 5*time.Minute, "context deadline of each work item")
	flag.Parse()
	if err := run(item.Client(*client), *url, *n, *tools, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "listchild:", err)
		os.Exit(1)
	}
}

func run(client item.Client, url string, n, tools int, timeout time.Duration) error {
	hc, err := mcptest.LoopbackClient(url, timeout)
	if err != nil {
		return err
	}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		before, err := cpu()
		if err != nil {
			cancel()
			return err
		}
		start := time.Now()
		err = item.Run(ctx, client, item.Spec{URL: url, HTTPClient: hc, WantTools: tools})
		wall := time.Since(start)
		cancel()
		if err != nil {
			return err
		}
		after, err := cpu()
		if err != nil {
			return err
		}
		fmt.Printf("list %d %d\n", (after - before).Nanoseconds(), wall.Nanoseconds())
	}
	return nil
}

// cpu is the user + system time this process has used, every thread.
func cpu() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
