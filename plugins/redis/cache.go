package redisstore

import (
	"sync"
)

// indexCache keeps, per owning project, the index data search reads again
// and again — posting lists, field-length buckets, doc id → qa_id entries —
// tagged with the project's index version: the "iv" field of its stats
// hash, which every write that changes the index sets to a fresh random
// token in the same commit (indexOps). A search reads iv in its first
// pipeline, together with whatever is not cached; cached data is used only
// when iv is unchanged, so a search never sees an index older than the iv
// it read (the same guarantee as reading everything). Data read after iv
// is tagged with that iv: it may be newer, never older, and the next change
// of iv drops it. A token, not a counter: a server restored from an older
// snapshot never matches data cached from a newer one. Records (trust
// state changes on every validation) are never cached.
//
// The cache is bounded by bytes; past the bound it is emptied (simple, and
// the next searches refill what is hot).
type indexCache struct {
	max int64

	mu     sync.Mutex
	bytes  int64
	owners map[string]*ownerCache
}

type ownerCache struct {
	iv    string
	posts map[string]cachedList // scope name + "\x00" + term
	lens  map[uint64]string     // bucket number → bucket value ("" absent)
	docs  map[uint64]string     // doc id → docs entry ("" absent)
}

// cachedList is one posting list ("" when the term has none) and its
// document frequency.
type cachedList struct {
	list  string
	df    int64
	skips []skipEntry // nil for short lists
}

func newIndexCache(max int64) *indexCache {
	if max <= 0 {
		return nil
	}
	return &indexCache{max: max, owners: map[string]*ownerCache{}}
}

func postKey(scope, term string) string { return scope + "\x00" + term }

// ivOf returns the version the owner's cached data holds ("" none).
func (c *indexCache) ivOf(owner string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if oc := c.owners[owner]; oc != nil {
		return oc.iv
	}
	return ""
}

// posting returns the cached list of term in scope if the owner's cache
// holds version iv.
func (c *indexCache) posting(owner, iv, scope, term string) (cachedList, bool) {
	if c == nil || iv == "" {
		return cachedList{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		return cachedList{}, false
	}
	l, ok := oc.posts[postKey(scope, term)]
	return l, ok
}

// at returns the owner's cache for version iv, replacing an older one;
// nil when iv is empty (data written before versions existed: not cached).
// c.mu must be held.
func (c *indexCache) at(owner, iv string) *ownerCache {
	if iv == "" {
		return nil
	}
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		if oc != nil {
			c.bytes -= oc.size()
		}
		oc = &ownerCache{iv: iv, posts: map[string]cachedList{}, lens: map[uint64]string{}, docs: map[uint64]string{}}
		c.owners[owner] = oc
	}
	return oc
}

func (oc *ownerCache) size() int64 {
	var n int64
	for k, l := range oc.posts {
		n += int64(len(k) + len(l.list) + 48 + 16*len(l.skips))
	}
	for _, v := range oc.lens {
		n += int64(len(v) + 32)
	}
	for _, v := range oc.docs {
		n += int64(len(v) + 32)
	}
	return n
}

// grow accounts n more bytes and empties the cache past its bound.
// c.mu must be held.
func (c *indexCache) grow(n int64) {
	c.bytes += n
	if c.bytes > c.max {
		clear(c.owners)
		c.bytes = 0
	}
}

// putPostings stores lists of one scope read at version iv.
func (c *indexCache) putPostings(owner, iv, scope string, lists map[string]cachedList) {
	if c == nil || iv == "" || len(lists) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.at(owner, iv)
	var n int64
	for t, l := range lists {
		k := postKey(scope, t)
		if _, ok := oc.posts[k]; !ok {
			oc.posts[k] = l
			n += int64(len(k) + len(l.list) + 48 + 16*len(l.skips))
		}
	}
	c.grow(n)
}

// lensBuckets returns the cached buckets among want (bucket numbers) for
// version iv, and the numbers still to read.
func (c *indexCache) lensBuckets(owner, iv string, want []uint64) (map[uint64]string, []uint64) {
	if c == nil || iv == "" {
		return nil, want
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		return nil, want
	}
	got := map[uint64]string{}
	var missing []uint64
	for _, n := range want {
		if v, ok := oc.lens[n]; ok {
			got[n] = v
		} else {
			missing = append(missing, n)
		}
	}
	return got, missing
}

func (c *indexCache) putLens(owner, iv string, buckets map[uint64]string) {
	if c == nil || iv == "" || len(buckets) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.at(owner, iv)
	var n int64
	for b, v := range buckets {
		if _, ok := oc.lens[b]; !ok {
			oc.lens[b] = v
			n += int64(len(v) + 32)
		}
	}
	c.grow(n)
}

// doc returns the cached docs entry of doc for version iv.
func (c *indexCache) doc(owner, iv string, doc uint64) (string, bool) {
	if c == nil || iv == "" {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		return "", false
	}
	v, ok := oc.docs[doc]
	return v, ok
}

func (c *indexCache) putDocs(owner, iv string, docs map[uint64]string) {
	if c == nil || iv == "" || len(docs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.at(owner, iv)
	var n int64
	for d, v := range docs {
		if _, ok := oc.docs[d]; !ok {
			oc.docs[d] = v
			n += int64(len(v) + 32)
		}
	}
	c.grow(n)
}
