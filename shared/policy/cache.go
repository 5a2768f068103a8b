package policy

import (
	"crypto/sha256"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CacheSize is how many compiled policies a Cache keeps on a warm
// instance.
const CacheSize = 64

// Cache keeps compiled policies by their document's SHA-256, so each
// catalog version's policy is compiled once per instance, and catalogs
// sharing one document share its compilation. It is safe for concurrent
// use; a refused document is not cached.
type Cache struct {
	lru *lru.Cache[[sha256.Size]byte, *Policy]
}

// NewCache returns an empty cache of CacheSize policies.
func NewCache() *Cache {
	c, _ := lru.New[[sha256.Size]byte, *Policy](CacheSize) // only a size ≤ 0 fails
	return &Cache{lru: c}
}

// Get returns the compiled policy of document doc (empty: no policy,
// nil), compiling it on first use.
func (c *Cache) Get(doc []byte) (*Policy, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	key := sha256.Sum256(doc)
	if p, ok := c.lru.Get(key); ok {
		return p, nil
	}
	p, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	c.lru.Add(key, p)
	return p, nil
}
