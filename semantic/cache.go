package semantic

import (
	"container/list"
	"sync"
)

// DefaultCacheSize is the number of vectors a Cache holds when asked for
// size ≤ 0.
const DefaultCacheSize = 256

// Cache is a bounded least-recently-used map from text to vector, used for
// query embeddings (repeated prompts do not call the model again). It is safe
// for concurrent use. Keys include the embedder's Name, so one cache may
// serve several embedders without mixing their vectors. Vectors returned by
// Get are shared: treat them as read-only.
type Cache struct {
	mu    sync.Mutex
	size  int
	ll    *list.List // front = most recent; values are *cacheEntry
	items map[string]*list.Element

	hits, misses uint64
}

type cacheEntry struct {
	key string
	vec []float32
}

// NewCache returns a Cache holding at most size vectors (size ≤ 0 →
// DefaultCacheSize).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{size: size, ll: list.New(), items: make(map[string]*list.Element, size)}
}

func cacheKey(model, text string) string { return model + "\x00" + text }

// Get returns the vector cached for text under model.
func (c *Cache) Get(model, text string) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[cacheKey(model, text)]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.ll.MoveToFront(el)
	return el.Value.(*cacheEntry).vec, true
}

// Put stores vec for text under model, evicting the least recently used
// entry when full.
func (c *Cache) Put(model, text string, vec []float32) {
	if c == nil {
		return
	}
	k := cacheKey(model, text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value.(*cacheEntry).vec = vec
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, vec: vec})
	for c.ll.Len() > c.size {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*cacheEntry).key)
	}
}

// Len is the number of cached vectors.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Stats returns the number of hits and misses of Get so far.
func (c *Cache) Stats() (hits, misses uint64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}
