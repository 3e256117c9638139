package redisstore

import (
	"sync"
)

// indexCache keeps the index data search reads again and again — posting
// lists, field-length buckets, doc id → qa_id entries — of each owner at
// one index version: the "iv" field of the owner's stats hash, which every
// write that changes the index sets to a fresh random token in the same
// commit (indexOps). A search reads iv in its first pipeline, together
// with whatever is not cached; cached data is used only when the owner's
// version in the cache is the one read, so a search never sees an index
// older than the iv it read (the same guarantee as reading everything).
// Only data read between two equal reads of iv is cached (queueIV):
// exactly that version's. Data of another version replaces all the
// owner's. A token, not a counter: a server restored from an older
// snapshot never matches data cached from a newer one. Records (their
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

// ownerCache is what the cache holds of one owner's index at version iv.
// An owner never written (iv neverWritten) holds every list, as none.
type ownerCache struct {
	iv     string
	bytes  int64
	lists  map[string]map[string]*plist   // scope → term → list (nil: none)
	values [kindDoc + 1]map[uint64]string // kindLens, kindDoc: by number ("": absent)
}

// The kinds of cached values: a lens bucket by number, a docs entry by
// doc id.
const (
	kindLens byte = iota
	kindDoc
)

func newIndexCache(max int64) *indexCache {
	if max <= 0 {
		return nil
	}
	return &indexCache{max: max, owners: map[string]*ownerCache{}}
}

// at returns owner's part of the cache at version iv, made (in place of
// one of another version) when absent (c.mu held).
func (c *indexCache) at(owner, iv string) *ownerCache {
	o := c.owners[owner]
	if o == nil || o.iv != iv {
		if o != nil {
			c.bytes -= o.bytes
		}
		o = &ownerCache{iv: iv, lists: map[string]map[string]*plist{}}
		c.owners[owner] = o
	}
	return o
}

// add accounts for an entry of n bytes of owner at version iv, emptying
// the cache first when it would take it past its bound, and returns the
// owner's part (c.mu held). An approximate size: the entry's keys and
// value, and a fixed estimate for the map entry.
func (c *indexCache) add(owner, iv string, n int64) *ownerCache {
	n += 64
	if c.bytes+n > c.max {
		c.owners, c.bytes = map[string]*ownerCache{}, 0
	}
	o := c.at(owner, iv)
	c.bytes += n
	o.bytes += n
	return o
}

// drop forgets owner: its index changed.
func (c *indexCache) drop(owner string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.owners[owner]; o != nil {
		c.bytes -= o.bytes
		delete(c.owners, owner)
	}
}

// postings returns the version the cache holds owner at ("": none) and
// the lists of terms in scope it holds: held[i] is terms[i]'s (ok false:
// not held; a nil list: the term has none).
func (c *indexCache) postings(owner, scope string, terms []string) (iv string, held []heldList) {
	if c == nil {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.owners[owner]
	if o == nil {
		return "", nil
	}
	held = make([]heldList, len(terms))
	lists, all := o.lists[scope], o.iv == neverWritten
	for i, t := range terms {
		l, ok := lists[t]
		held[i] = heldList{l, ok || all}
	}
	return o.iv, held
}

// heldList is a term's list as the cache holds it.
type heldList struct {
	list *plist
	ok   bool
}

// putLists stores lists of one scope read at version iv. A list held
// already stays, unless the new one has the field lengths attached and it
// has not.
func (c *indexCache) putLists(owner, iv, scope string, lists map[string]*plist) {
	if c == nil || iv == "" || len(lists) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, l := range lists {
		if o := c.owners[owner]; o != nil && o.iv == iv {
			old, ok := o.lists[scope][t]
			if ok && (old == nil || old.lens || l == nil || !l.lens) {
				continue
			}
			if ok {
				n := int64(len(scope)+len(t)+64) + old.size()
				c.bytes, o.bytes = c.bytes-n, o.bytes-n
			}
		}
		o := c.add(owner, iv, int64(len(scope)+len(t))+l.size())
		if o.lists[scope] == nil {
			o.lists[scope] = map[string]*plist{}
		}
		o.lists[scope][t] = l
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
	var held map[uint64]string
	if o := c.owners[owner]; o != nil && o.iv == iv {
		held = o.values[kind]
	}
	for _, n := range ns {
		if v, ok := held[n]; ok {
			out[n] = v
		} else {
			missing = append(missing, n)
		}
	}
	return missing
}

// putValues stores values of kind read at version iv.
func (c *indexCache) putValues(kind byte, owner, iv string, vals map[uint64]string) {
	if c == nil || iv == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, v := range vals {
		if o := c.owners[owner]; o != nil && o.iv == iv {
			if _, ok := o.values[kind][n]; ok {
				continue
			}
		}
		o := c.add(owner, iv, int64(len(v)+8))
		if o.values[kind] == nil {
			o.values[kind] = map[uint64]string{}
		}
		o.values[kind][n] = v
	}
}
