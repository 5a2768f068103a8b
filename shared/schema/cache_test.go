package schema

import (
	"errors"
	"sync"
	"testing"
)

// countingCache returns a cache of size whose checks are counted in *n.
func countingCache(size int, n *int) *Cache {
	c := NewCache(size)
	var mu sync.Mutex
	c.check = func(b []byte) error {
		mu.Lock()
		*n++
		mu.Unlock()
		return Check(b)
	}
	return c
}

func TestCacheChecksASharedSchemaOnce(t *testing.T) {
	var n int
	c := countingCache(0, &n)
	shared := distinct(1)
	for range 100 {
		if err := c.Check(shared); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Errorf("100 lookups of one schema ran Check %d times, want 1", n)
	}
	if got := c.Stats(); got != (CacheStats{Checks: 1, Hits: 99}) {
		t.Errorf("Stats = %+v, want 1 check and 99 hits", got)
	}
}

func TestCacheKeepsRefusals(t *testing.T) {
	var n int
	c := countingCache(0, &n)
	bad := []byte(`{"type":"object","properties":{"a":{"type":"strng"}}}`)
	first, second := c.Check(bad), c.Check(bad)
	if !errors.Is(first, ErrRefused) || second == nil || first.Error() != second.Error() {
		t.Errorf("Check twice = %v, %v; want the same refusal", first, second)
	}
	if want := Check(bad); first.Error() != want.Error() {
		t.Errorf("cached refusal %q, want Check's %q", first, want)
	}
	if n != 1 {
		t.Errorf("ran Check %d times, want 1", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	var n int
	c := countingCache(2, &n)
	a, b, d := distinct(1), distinct(2), distinct(3)
	for _, s := range [][]byte{a, b, d, a} { // d evicts a, the least recently used
		if err := c.Check(s); err != nil {
			t.Fatal(err)
		}
	}
	if n != 4 {
		t.Errorf("ran Check %d times, want 4: a third schema evicts the first from a cache of 2", n)
	}
}

func TestCacheIsSafeForConcurrentUse(t *testing.T) {
	c := NewCache(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := c.Check(distinct(i + g%2)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if s := c.Stats(); s.Checks+s.Hits != 200 || s.Checks < 51 {
		t.Errorf("Stats = %+v, want 200 lookups and at least 51 checks", s)
	}
}

// BenchmarkCheckDistinctCached re-checks the 1,000 distinct schemas through
// a warm Cache, as an unchanged re-discovery on a warm instance does.
func BenchmarkCheckDistinctCached(b *testing.B) {
	c := NewCache(0)
	schemas := make([][]byte, 1000)
	for i := range schemas {
		schemas[i] = distinct(i)
		if err := c.Check(schemas[i]); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		for _, s := range schemas {
			if err := c.Check(s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(schemas)), "ns/tool")
}
