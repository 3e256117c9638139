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
// snapshot never matches data cached from a newer one. Records (their trust
// state changes at every validation) are not kept here but by headMemo,
// which follows each project's change feed.
//
// The cache is bounded by bytes; past the bound it is emptied (simple, and
// the next searches refill what is hot).
type indexCache struct {
	max int64

	mu     sync.Mutex
	bytes  int64
	owners map[string]*ownerCache
	// empty holds the owners last seen never written (no index version,
	// no documents): a search reads no lists of theirs, only their stats,
	// which tell when that changes. Such an owner has no version to cache
	// anything under, and the global project of a team that does not use
	// it stays so.
	empty map[string]bool
}

// isEmpty reports whether owner was last seen never written.
func (c *indexCache) isEmpty(owner string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.empty[owner]
}

// setEmpty records whether owner was seen never written.
func (c *indexCache) setEmpty(owner string, empty bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !empty {
		delete(c.empty, owner)
		return
	}
	if len(c.empty) >= maxEmptyOwners {
		clear(c.empty)
	}
	c.empty[owner] = true
}

// maxEmptyOwners bounds indexCache.empty (searches may name any project).
const maxEmptyOwners = 4096

type ownerCache struct {
	iv    string
	posts map[string]map[string]*plist // scope name → term → list (nil: none)
	// lens[n] is lens bucket n's value ("" absent) where have[n].
	lens []string
	have []bool
	docs map[uint64]string // doc id → docs entry ("" absent)
}

func newIndexCache(max int64) *indexCache {
	if max <= 0 {
		return nil
	}
	return &indexCache{max: max, owners: map[string]*ownerCache{}, empty: map[string]bool{}}
}

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

// postings moves the cached lists of terms in scope into out, and returns
// the version they are of ("" none) and the terms it does not hold.
func (c *indexCache) postings(owner, scope string, terms []string, out map[string]*plist) (iv string, missing []string) {
	if c == nil {
		return "", terms
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil {
		return "", terms
	}
	lists := oc.posts[scope]
	for _, t := range terms {
		if l, ok := lists[t]; ok {
			out[t] = l
		} else {
			missing = append(missing, t)
		}
	}
	return oc.iv, missing
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
		oc = &ownerCache{iv: iv, posts: map[string]map[string]*plist{}, docs: map[uint64]string{}}
		c.owners[owner] = oc
	}
	return oc
}

func (oc *ownerCache) size() int64 {
	var n int64
	for _, lists := range oc.posts {
		for t, l := range lists {
			n += int64(len(t)+48) + l.size()
		}
	}
	for i, v := range oc.lens {
		if oc.have[i] {
			n += int64(len(v) + 32)
		}
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
func (c *indexCache) putPostings(owner, iv, scope string, lists map[string]*plist) {
	if c == nil || iv == "" || len(lists) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.at(owner, iv)
	have := oc.posts[scope]
	if have == nil {
		have = map[string]*plist{}
		oc.posts[scope] = have
	}
	var n int64
	for t, l := range lists {
		if _, ok := have[t]; !ok {
			have[t] = l
			n += int64(len(scope)+len(t)+48) + l.size()
		}
	}
	c.grow(n)
}

// attachLens replaces lists of one scope cached at version iv with their
// copies with field lengths attached (lists of that version too).
func (c *indexCache) attachLens(owner, iv, scope string, lists map[string]*plist) {
	if c == nil || iv == "" || len(lists) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		return
	}
	have := oc.posts[scope]
	var n int64
	for t, l := range lists {
		if old, ok := have[t]; ok && old != nil && !old.lens {
			have[t] = l
			n += l.size() - old.size()
		}
	}
	c.grow(n)
}

// lensBuckets copies the cached buckets among want (bucket numbers, each
// < len(dst)) at version iv into dst and returns the numbers still to read.
func (c *indexCache) lensBuckets(owner, iv string, want []uint64, dst []string) []uint64 {
	if c == nil || iv == "" {
		return want
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.owners[owner]
	if oc == nil || oc.iv != iv {
		return want
	}
	var missing []uint64
	for _, n := range want {
		if n < uint64(len(oc.have)) && oc.have[n] {
			dst[n] = oc.lens[n]
		} else {
			missing = append(missing, n)
		}
	}
	return missing
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
		if b >= uint64(len(oc.have)) {
			oc.lens = append(oc.lens, make([]string, b+1-uint64(len(oc.lens)))...)
			oc.have = append(oc.have, make([]bool, b+1-uint64(len(oc.have)))...)
		}
		if !oc.have[b] {
			oc.lens[b], oc.have[b] = v, true
			n += int64(len(v) + 32)
		}
	}
	c.grow(n)
}

// docs sets entries[i] and known[i] for each i whose docs entry (doc
// docs[i] of owners[i]) the cache holds at version ivs[i].
func (c *indexCache) docs(owners, ivs []string, docs []uint64, entries []string, known []bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, owner := range owners {
		if ivs[i] == "" {
			continue
		}
		if oc := c.owners[owner]; oc != nil && oc.iv == ivs[i] {
			entries[i], known[i] = oc.docs[docs[i]]
		}
	}
}

func (c *indexCache) putDocs(owner, iv string, docs map[uint64]string) {
	if c == nil || iv == "" || len(docs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grow(addNew(c.at(owner, iv).docs, docs))
}

// addNew copies the entries of src that dst lacks and returns the bytes
// they add to the cache (the value plus a fixed estimate per entry).
func addNew(dst, src map[uint64]string) int64 {
	var n int64
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v
			n += int64(len(v) + 32)
		}
	}
	return n
}
