// Package ttlcache is a small map whose entries expire after a time to live measured on an injected clock,
// the caches the AWS provider keeps in front of the AWS APIs (upstream's TTLs are set by each user).
package ttlcache

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Cache maps keys to values that expire ttl after they are set. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[K]entry[V]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// New returns an empty cache whose entries live for ttl on clk.
func New[K comparable, V any](clk clock.PassiveClock, ttl time.Duration) *Cache[K, V] {
	return &Cache[K, V]{clock: clk, ttl: ttl, entries: map[K]entry[V]{}}
}

// Get returns the key's value while it is fresh.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		delete(c.entries, key)
		var zero V
		return zero, false
	}
	return e.value, true
}

// Set stores the value for the cache's TTL.
func (c *Cache[K, V]) Set(key K, value V) { c.SetFor(key, value, c.ttl) }

// SetFor stores the value for ttl.
func (c *Cache[K, V]) SetFor(key K, value V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[key] = entry[V]{value: value, expires: now.Add(ttl)}
}

// Delete forgets the key.
func (c *Cache[K, V]) Delete(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// Entries returns the fresh entries.
func (c *Cache[K, V]) Entries() map[K]V {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	out := make(map[K]V, len(c.entries))
	for k, e := range c.entries {
		if now.Before(e.expires) {
			out[k] = e.value
		}
	}
	return out
}
