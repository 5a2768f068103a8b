package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/bench"
	"github.com/mcpfn/mcpfn/bench/item"
)

func TestParseBenchmem(t *testing.T) {
	out := []byte(`goos: linux
goarch: amd64
pkg: github.com/mcpfn/mcpfn/bench
cpu: AMD EPYC
BenchmarkItem/legacy/shared-mcp-2         	     100	  12072874 ns/op	 3020665 B/op	   11840 allocs/op
BenchmarkItem/stateless/go-sdk            	     300	   7745667 ns/op	 2479523 B/op	    4830 allocs/op
BenchmarkOther-2   	 100	  12 ns/op
PASS
`)
	want := map[string]allocStat{
		"BenchmarkItem/legacy/shared-mcp": {allocs: 11840, bytes: 3020665},
		"BenchmarkItem/stateless/go-sdk":  {allocs: 4830, bytes: 2479523},
	}
	if diff := cmp.Diff(want, parseBenchmem(out), cmp.AllowUnexported(allocStat{})); diff != "" {
		t.Errorf("parseBenchmem (-want +got):\n%s", diff)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"sub-millisecond", ms(530 * time.Microsecond), "0.53 ms"},
		{"milliseconds", ms(41160 * time.Microsecond), "41.16 ms"},
		{"hundreds of ms", ms(1075 * time.Millisecond), "1075 ms"},
		{"seconds", ms(30500 * time.Millisecond), "30.5 s"},
		{"KiB", bytesString(1536), "1.5 KiB"},
		{"MiB", bytesString(27 << 20), "27.0 MiB"},
		{"GiB", bytesString(6 << 30), "6.00 GiB"},
		{"table cell", oneLine("a |\n`b`", 100), "a \\| 'b'"},
		{"one second", seconds(time.Second), "1 s"},
		{"singular", plural(1, "write"), "1 write"},
		{"plural", plural(42, "write"), "42 writes"},
		{"cut", oneLine("abcdefgh", 6), "abc…"}, // the marker counts in n
		{"round-trip time", millis(20 * time.Millisecond), "20 ms"},
		{"primed client", rttClient(bench.RTTCase{Client: item.Ours, Hint: "2026-07-28", Primed: true}), "shared/mcp, hint 2026-07-28, primed"},
		{"count range", countRange([]int{2, 3, 2}), "2–3"},
		{"equal counts", countRange([]int{5, 5}), "5"},
		{"quoted ldflags", quoteFlags([]string{"-trimpath", "-ldflags=-s -w"})[1], "-ldflags='-s -w'"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []int
		wantErr bool
	}{
		{"two", "20,8", []int{20, 8}, false},
		{"spaces", "20, 8", []int{20, 8}, false},
		{"too few", "20", nil, true},
		{"zero", "20,0", nil, true},
		{"not a number", "20,x", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCounts(tc.in, 2)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseCounts(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseCounts(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
