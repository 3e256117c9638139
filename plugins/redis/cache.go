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
// half of it). It is kept by owner, then by scope and term or by number:
// a search's look-ups hash a term or a number in maps of one owner's data,
// small enough to stay in the processor's caches (one map keyed by owner,
// scope and term costs a prompt-style search twice as much).
type indexCache struct {
	mu     sync.Mutex
	max    int64
	bytes  int64
	owners map[string]*ownerCache
}

// ownerCache is what the cache holds of one owner's index.
type ownerCache struct {
	lists  map[string]map[string]cacheEntry   // scope → term → list
	values [kindDoc + 1]map[uint64]cacheEntry // kindLens, kindDoc: by number
	// blank: the owner was never written (neverWritten) when a search
	// last read its index version, so it has no lists to look up (the
	// global project of a team that does not use it).
	blank bool
}

// The kinds of cached data: a scope's posting list of a term, a lens
// bucket by number, a docs entry by doc id.
const (
	kindList byte = iota
	kindLens
	kindDoc
)

// cacheEntry is a piece of the index as of version iv.
type cacheEntry struct {
	iv   string
	list *plist // kindList (nil: none)
	val  string // kindLens, kindDoc ("" absent)
}

// cacheSize is an entry's approximate memory: its strings, the list, and
// a fixed estimate for the map entry.
func cacheSize(owner, scope, term string, e cacheEntry) int64 {
	return int64(len(owner)+len(scope)+len(term)+len(e.iv)+len(e.val)+96) + e.list.size()
}

func newIndexCache(max int64) *indexCache {
	if max <= 0 {
		return nil
	}
	return &indexCache{max: max, owners: map[string]*ownerCache{}}
}

// reserve accounts for n more bytes, emptying the cache first when they
// would take it past its bound (c.mu held). Maps taken from the cache
// before are then no longer in it.
func (c *indexCache) reserve(n int64) {
	if c.bytes+n > c.max {
		c.owners, c.bytes = map[string]*ownerCache{}, 0
	}
	c.bytes += n
}

// ownerOf is owner's part of the cache, made when absent (c.mu held).
func (c *indexCache) ownerOf(owner string) *ownerCache {
	o := c.owners[owner]
	if o == nil {
		o = &ownerCache{lists: map[string]map[string]cacheEntry{}}
		c.owners[owner] = o
	}
	return o
}

// isBlank reports whether owner was never written when a search last
// read its index version.
func (c *indexCache) isBlank(owner string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.owners[owner]
	return o != nil && o.blank
}

// setBlank records whether the index version of owner a search just read
// is neverWritten.
func (c *indexCache) setBlank(owner string, blank bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.owners[owner]; o != nil || blank {
		c.ownerOf(owner).blank = blank
	}
}

// postings returns the cached lists of terms in scope, each with the
// version it is of: out[i] is terms[i]'s, with iv "" when it is not held
// (every entry held has a version).
func (c *indexCache) postings(owner, scope string, terms []string) []cacheEntry {
	out := make([]cacheEntry, len(terms))
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.owners[owner]; o != nil {
		lists := o.lists[scope]
		for i, t := range terms {
			out[i] = lists[t]
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
		held := c.ownerOf(owner).lists[scope]
		old, ok := held[t]
		if !replace(old, ok) {
			continue
		}
		if ok {
			c.bytes -= cacheSize(owner, scope, t, old)
		}
		e := cacheEntry{iv: iv, list: l}
		c.reserve(cacheSize(owner, scope, t, e))
		o := c.ownerOf(owner) // (another one if reserve emptied the cache)
		if o.lists[scope] == nil {
			o.lists[scope] = map[string]cacheEntry{}
		}
		o.lists[scope][t] = e
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
	var held map[uint64]cacheEntry
	if o := c.owners[owner]; o != nil {
		held = o.values[kind]
	}
	for _, n := range ns {
		if e, ok := held[n]; ok && e.iv == iv {
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
		old, ok := c.ownerOf(owner).values[kind][n]
		if ok && old.iv == iv {
			continue
		}
		if ok {
			c.bytes -= cacheSize(owner, "", "", old)
		}
		e := cacheEntry{iv: iv, val: v}
		c.reserve(cacheSize(owner, "", "", e))
		o := c.ownerOf(owner)
		if o.values[kind] == nil {
			o.values[kind] = map[uint64]cacheEntry{}
		}
		o.values[kind][n] = e
	}
}
