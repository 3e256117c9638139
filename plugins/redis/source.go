package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
)

// scope is one part of the index a search reads: a project's own QAs, or
// the QAs an owner shares with the searching project.
type scope struct {
	owner, name string
	iv          string // the owner's index version read with the stats
	hv          string // the owner's record version read with the stats
	docs        int64
	lens        [retrieval.NumFields]int64
	lists       map[string]*plist // term → decoded postings (nil: none)
}

// source implements retrieval.Source over postings fetched from Redis in
// one pipeline per round: every query term's posting list of every scope,
// plus the scopes' collection stats. Doc ids are scope index << 32 | doc.
type source struct {
	scopes []*scope
	// iv is each owner's index version (indexCache).
	iv map[string]string
	// hv is each owner's record version (headMemo): read with the stats,
	// then the one the memo is at (followChanges).
	hv map[string]string
	// terms are the query's terms, repeats included (the scorer's
	// SearchTerms weighs a repeated term more).
	terms []string
	// pool gives scratch (nil: a fresh one).
	pool    *sync.Pool
	scratch *scanScratch
}

// scanScratch is the memory of the scorer's calls into a source:
// ScanPostings' block (a search reads a few lists, one after the other; a
// source serves one search, one call at a time) and TermFreqs' arrays. A
// search takes one from the store's pool at its first call and gives it
// back when the scorer is done (release): otherwise 6 KiB and more a
// search, a third of what it allocates, each byte a share of the
// collector's work.
type scanScratch struct {
	block [scanBlock]retrieval.Posting
	tfs   []retrieval.TF
	lens  []uint64
}

// buffers returns the source's scratch, taken at the first call.
func (src *source) buffers() *scanScratch {
	if src.scratch == nil {
		if src.pool != nil {
			src.scratch, _ = src.pool.Get().(*scanScratch)
		}
		if src.scratch == nil {
			src.scratch = &scanScratch{}
		}
	}
	return src.scratch
}

// release gives the scratch back to the pool: the scorer is done with
// the source.
func (src *source) release() {
	if src.scratch != nil && src.pool != nil {
		src.pool.Put(src.scratch)
	}
	src.scratch = nil
}

func (src *source) Stats(ctx context.Context) (retrieval.Stats, error) {
	var st retrieval.Stats
	for _, sc := range src.scopes {
		st.Docs += sc.docs
		st.TotalLen[0] += sc.lens[0]
		st.TotalLen[1] += sc.lens[1]
	}
	return st, ctx.Err()
}

func (src *source) DocFreq(ctx context.Context, term string) (int64, error) {
	var n int64
	for _, sc := range src.scopes {
		n += sc.lists[term].df()
	}
	return n, ctx.Err()
}

// Postings calls fn with the postings of ScanPostings (the one the scorer
// reads), one at a time.
func (src *source) Postings(ctx context.Context, term string, fn func(retrieval.Posting) bool) error {
	done := false
	return src.ScanPostings(ctx, term, func(block []retrieval.Posting) {
		for _, p := range block {
			if done || !fn(p) {
				done = true
				return
			}
		}
	})
}

// TermFreqs implements retrieval.TermFreqReader over the fetched postings:
// the scorer's rescoring of common terms for its best candidates walks
// each term's doc-ordered list once against the sorted candidates (no map
// lookup), and stops after the last candidate. A candidate's field
// lengths come with it from the first list that holds it (one that none
// holds scores nothing, whatever its lengths).
func (src *source) TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(doc uint64, tfs []retrieval.TF, lens [retrieval.NumFields]uint32)) error {
	// The scorer asks for candidates in doc order: those are not copied.
	sorted := docs
	for i := 1; i < len(docs); i++ {
		if docs[i] <= docs[i-1] {
			sorted = slices.Compact(slices.Sorted(slices.Values(docs)))
			break
		}
	}
	nt := len(terms)
	buf := src.buffers()
	buf.tfs = slices.Grow(buf.tfs[:0], len(sorted)*nt)[:len(sorted)*nt]
	buf.lens = slices.Grow(buf.lens[:0], len(sorted))[:len(sorted)]
	tfs, lens := buf.tfs, buf.lens // (lens: packPost words, for the lengths)
	clear(tfs)
	clear(lens)
	for lo := 0; lo < len(sorted); {
		si := sorted[lo] >> 32
		hi := lo
		for hi < len(sorted) && sorted[hi]>>32 == si {
			hi++
		}
		if si < uint64(len(src.scopes)) {
			sc := src.scopes[si]
			for j, t := range terms {
				walkCandidates(sc.lists[t], sorted[lo:hi], tfs[lo*nt+j:], nt, lens[lo:])
			}
		}
		lo = hi
	}
	for k, d := range sorted {
		if err := ctx.Err(); err != nil {
			return err
		}
		fn(d, tfs[k*nt:(k+1)*nt], lensOfPost(lens[k]))
	}
	return nil
}

// TermFreqsPerTerm implements retrieval.TermFreqsPerTerm: TermFreqs walks
// one posting list per term.
func (src *source) TermFreqsPerTerm() bool { return true }

// walkCandidates sets, for each candidate k of cands (sorted, one scope:
// the low 32 bits are the scope's doc ids) that l (lengths attached)
// holds, tfs[k*stride] to its term frequencies and lens[k] to its packed
// posting (packPost: the lengths). A candidate is looked up in the list's
// docRank when it has one, else by a galloping search from the one before,
// so a few hundred candidates in a list of 90k postings touch a fraction
// of it. (No callback: this is the rescoring's inner loop.)
func walkCandidates(l *plist, cands []uint64, tfs []retrieval.TF, stride int, lens []uint64) {
	if l == nil {
		return
	}
	if r := l.rank; r != nil {
		for k, c := range cands {
			if i := r.index(uint32(c)); i >= 0 {
				tfs[k*stride], lens[k] = tfOf(l.post[i]), l.post[i]
			}
		}
		return
	}
	i := 0
	for k, c := range cands {
		want := c & (1<<32 - 1)
		if i = l.search(i, uint32(want)); i == len(l.docs) {
			return
		}
		if uint64(l.docs[i]) == want {
			tfs[k*stride], lens[k] = tfOf(l.post[i]), l.post[i]
		}
	}
}

// distinctTerms are the distinct terms of an analysed query.
func distinctTerms(all []string) []string {
	out := make([]string, 0, len(all))
	for _, t := range all {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// termCmds are the reads of some terms' posting lists in one scope: the
// list key, and the term's field in its bucket hash (short lists).
type termCmds struct {
	terms []string
	posts []*redis.StringCmd
	short []*redis.SliceCmd
}

func (s *Store) queueTerms(ctx context.Context, pipe redis.Pipeliner, sc *scope, terms []string) *termCmds {
	if len(terms) == 0 {
		return nil
	}
	c := &termCmds{terms: terms}
	for _, t := range terms {
		c.posts = append(c.posts, pipe.Get(ctx, s.k.post(sc.owner, sc.name, t)))
		c.short = append(c.short, pipe.HMGet(ctx, s.k.postBucket(sc.owner, sc.name, t), shortFields(t)...))
	}
	return c
}

// read returns the lists read, decoded (absent terms included, as nil);
// nil when c is (nothing was read).
func (c *termCmds) read() (map[string]*plist, error) {
	if c == nil {
		return nil, nil
	}
	out := make(map[string]*plist, len(c.terms))
	for i, t := range c.terms {
		v, err := c.posts[i].Result()
		if errors.Is(err, redis.Nil) {
			var parts []any
			parts, err = c.short[i].Result()
			v = shortList(parts)
		}
		if err != nil {
			return nil, err
		}
		out[t] = decodeList(v)
	}
	return out, nil
}

// scopeCmds are a scope's reads in one pipeline: at first its stats with
// the owner's index version and the lists the cache does not hold; then,
// if need be, the lists the cache held at a version no longer current (no
// stats).
type scopeCmds struct {
	sc       *scope
	terms    []string   // the scope's terms
	cachedIV string     // the version the cache holds the owner at
	cached   []heldList // each term's list taken from the cache
	stats    *redis.SliceCmd
	tc       *termCmds
	ivEnd    *redis.StringCmd // the version again, after the lists
}

func (s *Store) queueScope(ctx context.Context, pipe redis.Pipeliner, sc *scope, terms []string) *scopeCmds {
	c := &scopeCmds{sc: sc, terms: terms}
	c.stats = pipe.HMGet(ctx, s.k.stats(sc.owner), statsFields(sc.name)...)
	c.cachedIV, c.cached = s.cache.postings(sc.owner, sc.name, terms)
	var fetch []string
	for i, t := range terms {
		if c.cached == nil || !c.cached[i].ok {
			fetch = append(fetch, t)
		}
	}
	c.tc = s.queueTerms(ctx, pipe, sc, fetch)
	if len(fetch) > 0 {
		// (Without lists to read, the stats and the version come from
		// one command: nothing to bracket.)
		c.ivEnd = s.queueIV(ctx, pipe, sc.owner)
	}
	return c
}

// ownStatsFields are statsFields(ownScope), which every search reads.
var ownStatsFields = []string{"n:" + ownScope, "q:" + ownScope, "a:" + ownScope, "iv", "hv"}

// statsFields are the fields of an owner's stats hash a search of scope
// reads: the scope's document count and field lengths, the owner's index
// and record versions.
func statsFields(scope string) []string {
	if scope == ownScope {
		return ownStatsFields
	}
	return []string{"n:" + scope, "q:" + scope, "a:" + scope, "iv", "hv"}
}

// queueIV reads the owner's index version at the end of a pipeline: data
// read between two equal reads of it is exactly that version's (every
// index write sets a new token), the only data the cache may keep — data
// read across a write is newer, and tagged with the older token it could
// be taken for that version's after a server restarted from an older
// snapshot brings the token back.
func (s *Store) queueIV(ctx context.Context, pipe redis.Pipeliner, owner string) *redis.StringCmd {
	if s.cache == nil {
		return nil
	}
	return pipe.HGet(ctx, s.k.stats(owner), "iv")
}

// neverWritten is the index version of an owner never written (no "iv",
// no documents): it has no lists at all, and the global project of a team
// that does not use it stays so. Every index write sets a token, which is
// never this.
const neverWritten = "-"

// stableIV is iv when the version read after the pipeline's data is
// still iv, else "" (cache nothing).
func stableIV(iv string, end *redis.StringCmd) string {
	if end == nil || iv == "" {
		return ""
	}
	v, err := end.Result()
	if errors.Is(err, redis.Nil) {
		v, err = neverWritten, nil
	}
	if err != nil || v != iv {
		return ""
	}
	return iv
}

// fill sets the scope's stats and lists from the pipeline's answers and
// caches what it read; it returns the terms taken from the cache at a
// version that is no longer current (to be read again).
func (s *Store) fill(c *scopeCmds) (stale []string, err error) {
	if c.stats == nil {
		return nil, s.takeLists(c)
	}
	vals, err := c.stats.Result()
	if err != nil {
		return nil, err
	}
	var nums [3]int64
	for i, v := range vals[:3] {
		if str, ok := v.(string); ok {
			nums[i], _ = strconv.ParseInt(str, 10, 64)
		}
	}
	sc := c.sc
	iv, _ := vals[3].(string)
	sc.hv, _ = vals[4].(string)
	sc.docs, sc.lens = nums[0], [retrieval.NumFields]int64{nums[1], nums[2]}
	if iv == "" && sc.docs == 0 {
		// (The stats and the version come from one command: they agree.)
		iv = neverWritten
	}
	if s.cache != nil {
		sc.iv = iv
	}
	// Room for the lists the scope may hold: those read and those the
	// cache holds (none at all in a scope never written).
	held := 0
	if c.tc != nil {
		held = len(c.tc.terms)
	}
	for _, e := range c.cached {
		if e.list != nil {
			held++
		}
	}
	sc.lists = make(map[string]*plist, held)
	if err := s.takeLists(c); err != nil {
		return nil, err
	}
	// The lists cached at version iv are exactly iv's, and the lists just
	// read are iv's or newer: together no older than iv.
	for i, e := range c.cached {
		switch {
		case !e.ok: // not held: read with the stats
		case iv == "" || c.cachedIV != iv:
			stale = append(stale, c.terms[i])
		case e.list != nil:
			sc.lists[c.terms[i]] = e.list
		}
	}
	return stale, nil
}

// takeLists sets the lists c read into its scope and caches them at the
// scope's version when the version read after them (c.ivEnd) is still
// that; else the scope's version becomes "" (the index moved on: nothing
// more of it is cached this search).
func (s *Store) takeLists(c *scopeCmds) error {
	read, err := c.tc.read()
	if err != nil {
		return err
	}
	sc := c.sc
	for t, l := range read {
		if l != nil {
			sc.lists[t] = l
		}
	}
	if c.ivEnd != nil {
		sc.iv = stableIV(sc.iv, c.ivEnd)
	}
	s.cache.putLists(sc.owner, sc.iv, sc.name, read)
	return nil
}

// newSource fetches the postings of query's terms in the scopes visible
// to project (only its own when ownOnly): one pipeline for the own and
// global scopes and the list of sharers, one more for shared scopes and
// the lists the cache held at a version no longer current. Lists the index
// cache holds at the owner's current version are not read.
func (s *Store) newSource(ctx context.Context, project, query string, ownOnly bool) (*source, error) {
	all := s.analyzer.Terms(query) // analysed once, for the scorer and the reads
	terms := distinctTerms(all)
	src := &source{iv: map[string]string{}, hv: map[string]string{}, terms: all, pool: &s.scratch}
	pipe := s.rdb.Pipeline()
	var next []*scopeCmds // the reads queued on pipe
	add := func(owner, name string) {
		sc := &scope{owner: owner, name: name}
		src.scopes = append(src.scopes, sc)
		next = append(next, s.queueScope(ctx, pipe, sc, terms))
	}
	add(project, ownScope)
	var sharers *redis.StringSliceCmd
	if !ownOnly && project != core.GlobalProject {
		add(core.GlobalProject, ownScope)
		sharers = pipe.SMembers(ctx, s.k.sharers(project))
	}
	// A pipeline's answers may ask for another: the scopes of the projects
	// sharing with project, and the lists to read again because the index
	// changed since the cache took them (a write between this and the
	// first read only makes them newer than sc.iv, which is then not
	// cached).
	for len(next) > 0 {
		if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		cmds := next
		pipe, next = s.rdb.Pipeline(), nil
		for _, c := range cmds {
			stale, err := s.fill(c)
			if err != nil {
				return nil, err
			}
			if len(stale) > 0 {
				r := &scopeCmds{sc: c.sc, tc: s.queueTerms(ctx, pipe, c.sc, stale)}
				r.ivEnd = s.queueIV(ctx, pipe, c.sc.owner)
				next = append(next, r)
			}
		}
		if sharers != nil {
			list, err := sharers.Result()
			if err != nil {
				return nil, err
			}
			sharers = nil
			slices.Sort(list)
			for _, o := range list {
				if o != project && o != core.GlobalProject {
					add(o, sharedScope(project))
				}
			}
		}
	}
	for _, sc := range src.scopes {
		src.iv[sc.owner], src.hv[sc.owner] = sc.iv, sc.hv
	}
	return src, s.fetchLens(ctx, src)
}

// fetchLens reads, in one pipeline, the lens buckets of the documents in
// src's postings whose lists do not have their field lengths attached yet
// (lists from the index cache usually have), attaches them, and caches the
// lists so completed at the version they and the buckets are of.
func (s *Store) fetchLens(ctx context.Context, src *source) error {
	var want map[string][]uint64 // owner → bucket numbers needed
	for _, sc := range src.scopes {
		for _, l := range sc.lists {
			if !l.lens {
				if want == nil {
					want = map[string][]uint64{}
				}
				for _, n := range l.buckets {
					want[sc.owner] = append(want[sc.owner], uint64(n))
				}
			}
		}
	}
	if want == nil {
		return nil // every list has its lengths (the index cache's usually have)
	}
	for owner, ns := range want {
		slices.Sort(ns)
		want[owner] = slices.Compact(ns)
	}
	// lensIV: owner → the version its buckets are of ("" unknown).
	lens, lensIV, err := s.readValues(ctx, kindLens, src.iv, want)
	if err != nil {
		return err
	}
	for _, sc := range src.scopes {
		var done map[string]*plist
		for t, l := range sc.lists {
			if l.lens {
				continue
			}
			l = l.withLens(lens[sc.owner])
			sc.lists[t] = l
			if done == nil {
				done = map[string]*plist{}
			}
			done[t] = l
		}
		if iv := lensIV[sc.owner]; iv != "" && iv == sc.iv {
			s.cache.putLists(sc.owner, iv, sc.name, done)
		}
	}
	return nil
}

// readValues reads index values of kind (kindLens: lens buckets, kindDoc:
// docs entries) of owners by number (want: owner → numbers, distinct):
// those the index cache holds at the owner's version ivs[owner], the
// others in one pipeline ("" where there is none), cached at the version
// they are of. at is, per owner, the version all its values are of ("":
// unknown).
func (s *Store) readValues(ctx context.Context, kind byte, ivs map[string]string, want map[string][]uint64) (
	vals map[string]map[uint64]string, at map[string]string, err error,
) {
	vals, at = make(map[string]map[uint64]string, len(want)), make(map[string]string, len(want))
	type read struct {
		owner string
		n     uint64
		cmd   *redis.StringCmd
	}
	var reads []read
	var pipe redis.Pipeliner // made at the first value the cache lacks
	var ivEnd map[string]*redis.StringCmd
	for owner, ns := range want {
		vals[owner], at[owner] = make(map[uint64]string, len(ns)), ivs[owner]
		missing := s.cache.values(kind, owner, ivs[owner], ns, vals[owner])
		if len(missing) > 0 && pipe == nil {
			pipe, ivEnd = s.rdb.Pipeline(), map[string]*redis.StringCmd{}
		}
		for _, n := range missing {
			var cmd *redis.StringCmd
			if kind == kindLens {
				cmd = pipe.Get(ctx, s.k.lens(owner, n*lensBucket))
			} else {
				cmd = pipe.HGet(ctx, s.k.docs(owner, n), strconv.FormatUint(n, 10))
			}
			reads = append(reads, read{owner, n, cmd})
		}
		if len(missing) > 0 && ivs[owner] != "" {
			ivEnd[owner] = s.queueIV(ctx, pipe, owner)
		}
	}
	if len(reads) == 0 {
		return vals, at, nil
	}
	if err := s.batch.exec(ctx, pipe); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	for _, r := range reads {
		v, err := r.cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
		vals[r.owner][r.n] = v
	}
	for owner, end := range ivEnd {
		at[owner] = stableIV(ivs[owner], end)
		s.cache.putValues(kind, owner, at[owner], vals[owner])
	}
	return vals, at, nil
}
