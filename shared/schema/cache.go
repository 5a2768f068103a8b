package schema

import (
	"crypto/sha256"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is how many verdicts NewCache keeps when given 0.
const DefaultCacheSize = 8192

// Cache remembers Check's verdict per schema, keyed by the SHA-256 of its
// bytes, so a schema shared by many tools, servers or re-discoveries on a
// warm instance is checked once. It holds at most its size in verdicts and
// drops the least recently used. The zero value is not usable; a *Cache is
// safe for concurrent use.
type Cache struct {
	verdicts *lru.Cache[[sha256.Size]byte, error]
	check    func([]byte) error // Check; tests count calls through it
	checks   atomic.Int64
	hits     atomic.Int64
}

// CacheStats counts a Cache's lookups: Checks ran Check, Hits did not.
type CacheStats struct {
	Checks, Hits int64
}

// NewCache returns a Cache of size verdicts; 0 means DefaultCacheSize.
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	v, err := lru.New[[sha256.Size]byte, error](size)
	if err != nil {
		panic("schema: " + err.Error()) // only for size <= 0, ruled out above
	}
	return &Cache{verdicts: v, check: Check}
}

// Check returns Check(schema), from the cache when this schema's bytes were
// judged before. Two callers may judge the same new schema at once; both
// get the same verdict.
func (c *Cache) Check(schema []byte) error {
	key := sha256.Sum256(schema)
	if err, ok := c.verdicts.Get(key); ok {
		c.hits.Add(1)
		return err
	}
	c.checks.Add(1)
	err := c.check(schema)
	c.verdicts.Add(key, err)
	return err
}

// Stats returns the lookups so far.
func (c *Cache) Stats() CacheStats {
	return CacheStats{Checks: c.checks.Load(), Hits: c.hits.Load()}
}

// Known reports whether schema's verdict is cached, without counting a
// lookup or refreshing its place.
func (c *Cache) Known(schema []byte) bool {
	return c.verdicts.Contains(sha256.Sum256(schema))
}
