package redisstore

import (
	"sync"
)

// indexCache keeps the index data search reads again and again — posting
// lists, field-length buckets, doc id → qa_id entries — each tagged with
// its owner's index version: the "iv" field of the owner's stats hash,
// which every write that changes the index sets to a fresh random token in
// the same commit (indexOps). A search reads iv in its first pipeline,
// together with whatever is not cached; cached data is used only when its
// iv is the one read, so a search never sees an index older than the iv
// it read (the same guarantee as reading everything). Only data read
// between two equal reads of iv is cached (queueIV): exactly that
// version's. A token, not a counter: a server restored from an older
// snapshot never matches data cached from a newer one. Data of a version
// no longer current is never used again, and ages out. Records (their
// trust state changes at every validation) are not kept here but by
// headMemo, which follows each project's change feed.
//
// The cache is bounded by bytes; past the bound it is emptied (simple, and
// the next searches refill what is hot; two generations measured no
// better, and worse where the working set fits the whole bound but not
// half of it).
type indexCache struct {
	mu      sync.Mutex
	entries genMap[cacheKey, cacheEntry]
}

// The kinds of cached data: a scope's posting list of a term, a lens
// bucket by number, a docs entry by doc id.
const (
	kindList byte = iota
	kindLens
	kindDoc
)

// cacheKey names one cached piece of an owner's index: scope and term for
// a list, n for a lens bucket or a docs entry.
type cacheKey struct {
	kind               byte
	owner, scope, term string
	n                  uint64
}

// cacheEntry is a piece of the index as of version iv.
type cacheEntry struct {
	iv   string
	list *plist // kindList (nil: none)
	val  string // kindLens, kindDoc ("" absent)
}

// cacheSize is an entry's approximate memory: its strings, the list, and
// a fixed estimate for the map entry.
func cacheSize(k cacheKey, e cacheEntry) int64 {
	return int64(len(k.owner)+len(k.scope)+len(k.term)+len(e.iv)+len(e.val)+96) + e.list.size()
}

func newIndexCache(max int64) *indexCache {
	if max <= 0 {
		return nil
	}
	return &indexCache{entries: newGenMap(max, 1, cacheSize)}
}

// postings returns the cached lists of terms in scope, each with the
// version it is of (term → entry; terms not held are absent).
func (c *indexCache) postings(owner, scope string, terms []string) map[string]cacheEntry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]cacheEntry, len(terms))
	for _, t := range terms {
		if e, ok := c.entries.get(cacheKey{kind: kindList, owner: owner, scope: scope, term: t}); ok {
			out[t] = e
		}
	}
	return out
}

// putPostings stores lists of one scope read at version iv; a list held
// at iv already (its field lengths attached, maybe) stays.
func (c *indexCache) putPostings(owner, iv, scope string, lists map[string]*plist) {
	c.putLists(owner, iv, scope, lists, func(old cacheEntry, ok bool) bool { return !ok || old.iv != iv })
}

// attachLens replaces lists of one scope cached at version iv with their
// copies with field lengths attached (lists of that version too).
func (c *indexCache) attachLens(owner, iv, scope string, lists map[string]*plist) {
	c.putLists(owner, iv, scope, lists, func(old cacheEntry, ok bool) bool {
		return ok && old.iv == iv && old.list != nil && !old.list.lens
	})
}

// putLists stores each of lists at version iv where replace approves of
// the entry it would replace.
func (c *indexCache) putLists(owner, iv, scope string, lists map[string]*plist, replace func(cacheEntry, bool) bool) {
	if c == nil || iv == "" || len(lists) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, l := range lists {
		k := cacheKey{kind: kindList, owner: owner, scope: scope, term: t}
		if replace(c.entries.get(k)) {
			c.entries.put(k, cacheEntry{iv: iv, list: l})
		}
	}
}

// values copies into out the values of kind (kindLens, kindDoc) among ns
// that the cache holds at version iv, and returns the numbers it does not.
func (c *indexCache) values(kind byte, owner, iv string, ns []uint64, out map[uint64]string) (missing []uint64) {
	if c == nil || iv == "" {
		return ns
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range ns {
		if e, ok := c.entries.get(cacheKey{kind: kind, owner: owner, n: n}); ok && e.iv == iv {
			out[n] = e.val
		} else {
			missing = append(missing, n)
		}
	}
	return missing
}

// putValues stores values of kind read at version iv.
func (c *indexCache) putValues(kind byte, owner, iv string, vals map[uint64]string) {
	if c == nil || iv == "" || len(vals) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, v := range vals {
		k := cacheKey{kind: kind, owner: owner, n: n}
		if e, ok := c.entries.get(k); !ok || e.iv != iv {
			c.entries.put(k, cacheEntry{iv: iv, val: v})
		}
	}
}
