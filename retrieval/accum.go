package retrieval

// The accumulator of per-document scores and the top-k selection over it.

import (
	"cmp"
	mathbits "math/bits"
	"slices"
)

// better reports whether a ranks before b.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc < b.Doc
}

// sortHits sorts hits best first: by insertion when they are few (a top k;
// no comparison function to call), else with slices.SortFunc.
func sortHits(hits []Hit) {
	if len(hits) > 24 {
		slices.SortFunc(hits, func(a, b Hit) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Doc, b.Doc))
		})
		return
	}
	for i := 1; i < len(hits); i++ {
		h := hits[i]
		j := i
		for ; j > 0 && better(h, hits[j-1]); j-- {
			hits[j] = hits[j-1]
		}
		hits[j] = h
	}
}

// accum is an open-addressing hash table doc → score, reused across
// searches through the scorer's pools. Scores added are positive, so a zero
// score marks an empty slot. When coordination is on, covs (parallel to
// slots) holds each document's matched idf mass.
type accum struct {
	slots   []accSlot
	covs    []float64 // empty unless coordination is on
	shift   uint
	touched []uint32 // occupied slots, in insertion order
	// The term being read: its weight and the search's saturation, for
	// addTerm, a closure made once with the table (it escapes to the
	// Source), so that a search makes none.
	idf     float64
	sat     saturation
	addTerm func([]Posting)
}

type accSlot struct {
	doc   uint64
	score float64
}

// getAccum returns an empty table with room for n documents at load ≤ 1/2,
// tracking coverage when cov is set. Tables are pooled by size so that a
// search never works in a table much larger than it needs (which would
// cost cache misses).
func (s *Scorer) getAccum(n int, cov bool) *accum {
	bits := uint(6)
	for 1<<bits < 2*n {
		bits++
	}
	a, _ := s.pools[min(bits, uint(len(s.pools)-1))].Get().(*accum)
	if a == nil || len(a.slots) != 1<<bits {
		a = &accum{slots: make([]accSlot, 1<<bits), shift: 64 - bits}
		a.addTerm = func(ps []Posting) { a.addPostings(ps, a.idf, &a.sat) }
	}
	switch {
	case !cov:
		a.covs = a.covs[:0] // the memory stays for a later CJK query
	case cap(a.covs) >= len(a.slots):
		a.covs = a.covs[:len(a.slots)] // zeroed by putAccum
	default:
		a.covs = make([]float64, len(a.slots))
	}
	return a
}

func (s *Scorer) putAccum(a *accum) {
	for _, i := range a.touched {
		a.slots[i] = accSlot{}
		if len(a.covs) > 0 {
			a.covs[i] = 0
		}
	}
	a.touched = a.touched[:0]
	bits := 64 - a.shift
	if bits < uint(len(s.pools)) {
		s.pools[bits].Put(a)
	}
}

// add adds v to doc's score and c to its coverage (when tracked).
func (a *accum) add(doc uint64, v, c float64) {
	mask := uint64(len(a.slots) - 1)
	i := (doc * 0x9E3779B97F4A7C15) >> a.shift
	for {
		s := &a.slots[i]
		if s.score == 0 {
			*s = accSlot{doc: doc, score: v}
			if len(a.covs) > 0 {
				a.covs[i] = c
			}
			a.touched = append(a.touched, uint32(i))
			if 2*len(a.touched) > len(a.slots) {
				a.grow()
			}
			return
		}
		if s.doc == doc {
			s.score += v
			if len(a.covs) > 0 {
				a.covs[i] += c
			}
			return
		}
		i = (i + 1) & mask
	}
}

// addPostings adds idf·sat.of(p) to the score of each posting's document
// (and idf to its coverage, when tracked), skipping postings that saturate
// to 0: add, inlined, for the scan of a whole block.
func (a *accum) addPostings(ps []Posting, idf float64, sat *saturation) {
	if len(a.covs) > 0 {
		for _, p := range ps {
			if v := sat.of(p.TF, p.Len); v > 0 {
				a.add(p.Doc, idf*v, idf)
			}
		}
		return
	}
	slots, shift, touched := a.slots, a.shift, a.touched
	mask := uint64(len(slots) - 1)
	for _, p := range ps {
		v := sat.of(p.TF, p.Len)
		if v <= 0 {
			continue
		}
		v *= idf
		i := (p.Doc * 0x9E3779B97F4A7C15) >> shift
		for {
			s := &slots[i]
			if s.score == 0 {
				*s = accSlot{doc: p.Doc, score: v}
				touched = append(touched, uint32(i))
				if 2*len(touched) > len(slots) {
					a.touched = touched
					a.grow()
					slots, shift, touched = a.slots, a.shift, a.touched
					mask = uint64(len(slots) - 1)
				}
				break
			}
			if s.doc == p.Doc {
				s.score += v
				break
			}
			i = (i + 1) & mask
		}
	}
	a.touched = touched
}

// coverage returns doc's matched idf mass (0 when absent or not tracked).
func (a *accum) coverage(doc uint64) float64 {
	if len(a.covs) == 0 {
		return 0
	}
	mask := uint64(len(a.slots) - 1)
	i := (doc * 0x9E3779B97F4A7C15) >> a.shift
	for {
		s := &a.slots[i]
		if s.score == 0 {
			return 0
		}
		if s.doc == doc {
			return a.covs[i]
		}
		i = (i + 1) & mask
	}
}

// coordinate multiplies every score by its coordination factor (e > 0).
//
// For a top k (k > 0), only scores that can still reach it are changed: a
// document whose uncoordinated score is below a lower bound of the k-th
// best coordinated score stays below it whatever its factor (≤ 1), so it is
// left as it is and never returned. This saves most of the Pow calls.
func (a *accum) coordinate(k int, e, norm float64) {
	if e <= 0 || len(a.covs) == 0 {
		return
	}
	memo := newCoordMemo(norm, e)
	var theta float64
	if k > 0 && len(a.touched) > 8*k {
		theta = a.threshold(k, &memo)
	}
	for _, i := range a.touched {
		if s := &a.slots[i]; s.score >= theta {
			s.score *= memo.factor(a.covs[i])
		}
	}
}

// threshold returns a lower bound of the k-th best coordinated score (k ≤
// len(a.touched)): the k-th best among the 4k best uncoordinated scores,
// coordinated.
func (a *accum) threshold(k int, memo *coordMemo) float64 {
	hs := a.top(4*k, calib{}, 0)
	for i := range hs {
		hs[i].Score *= memo.factor(a.coverage(hs[i].Doc))
	}
	sortHits(hs)
	return hs[k-1].Score
}

// grow doubles the table (only when a Source returned more postings than
// its document frequencies announced).
func (a *accum) grow() {
	old, oldCovs := a.slots, a.covs
	touched := a.touched
	a.slots = make([]accSlot, 2*len(old))
	if len(oldCovs) > 0 {
		a.covs = make([]float64, 2*len(old))
	}
	a.shift--
	a.touched = make([]uint32, 0, 2*len(touched))
	for _, i := range touched {
		s := old[i]
		c := 0.0
		if len(oldCovs) > 0 {
			c = oldCovs[i]
		}
		a.add(s.doc, s.score, c)
	}
}

// top returns the k best documents (all when k ≤ 0) whose score is at
// least floor, best first, with Relevance = rc.of(Score).
func (a *accum) top(k int, rc calib, floor float64) []Hit {
	h := a.best(k, floor)
	for i := range h {
		h[i].Relevance = rc.of(h[i].Score)
	}
	sortHits(h)
	return h
}

// best returns the k best documents (all when k ≤ 0) whose score is at
// least floor, in no particular order, without Relevance.
func (a *accum) best(k int, floor float64) []Hit {
	if k <= 0 || k >= len(a.touched) {
		hits := make([]Hit, 0, len(a.touched))
		for _, i := range a.touched {
			if s := a.slots[i]; s.score >= floor {
				hits = append(hits, Hit{Doc: s.doc, Score: s.score})
			}
		}
		if k > 0 && len(hits) > k {
			sortHits(hits)
			hits = hits[:k]
		}
		return hits
	}
	// Min-heap of the k best so far; h[0] is the worst of them. A dense
	// table is read sequentially (cheaper than hopping through touched).
	// thr is the k-th best score once k are held (floor before): a slot
	// below it, or empty (score 0), cannot enter. Testing s.score >= thr
	// first keeps the loop's branch predictable once the heap is full.
	h := make([]Hit, 0, k)
	if t := a.estimate(k); t > floor {
		if h = a.heap(h, k, t); len(h) == k {
			return h // k at t or above: the k best are among them
		}
		h = h[:0]
	}
	return a.heap(h, k, floor)
}

// estimate returns a score that about 1.5·k documents reach, from a
// systematic sample of the table (0 when there are too few documents for
// it to save work): best offers the heap only those, instead of most of
// the table with the heap's early threshold.
func (a *accum) estimate(k int) float64 {
	return estimate(len(a.touched), k, func(i int) float64 { return a.slots[a.touched[i]].score })
}

// estimate returns a score that about 1.5·k of n scores reach, from a
// systematic sample of them (score(i) is the i-th), or 0 when they are too
// few for it to save work.
func estimate(n, k int, score func(int) float64) float64 {
	if k < estimateMinK || n <= 4*k {
		return 0
	}
	step := n / (2 * k)
	r := (3*k + 2*step - 1) / (2 * step) // ⌈1.5k/step⌉ ≥ 1
	// The r best of the sample, best first (r is small: k/(n/2k)).
	best := make([]float64, 0, r)
	for i := 0; i < n; i += step {
		v := score(i)
		if len(best) == r {
			if v <= best[r-1] {
				continue
			}
			best = best[:r-1]
		}
		j := len(best)
		best = append(best, v)
		for ; j > 0 && best[j-1] < v; j-- {
			best[j] = best[j-1]
		}
		best[j] = v
	}
	if len(best) < r {
		return 0
	}
	return best[r-1]
}

// estimateMinK is the least k estimate samples for.
const estimateMinK = 16

// bestSlots returns the k best of scored (k > 0), each at floor or above,
// in no particular order: as best does for the table.
func bestSlots(scored []accSlot, k int, floor float64) []Hit {
	h := make([]Hit, 0, min(k, len(scored)))
	heap := func(thr float64) {
		for _, s := range scored {
			if s.score >= thr {
				h, thr = pushBest(h, k, s, thr)
			}
		}
	}
	if t := estimate(len(scored), k, func(i int) float64 { return scored[i].score }); t > floor {
		if heap(t); len(h) == k {
			return h // k at t or above: the k best are among them
		}
		h = h[:0]
	}
	heap(floor)
	return h
}

// heap adds to h (empty, capacity k) the k best documents whose score is
// at least thr.
func (a *accum) heap(h []Hit, k int, thr float64) []Hit {
	if 8*len(a.touched) > len(a.slots) {
		for _, s := range a.slots {
			if s.score >= thr && s.score != 0 {
				h, thr = pushBest(h, k, s, thr)
			}
		}
	} else {
		for _, i := range a.touched {
			if s := a.slots[i]; s.score >= thr {
				h, thr = pushBest(h, k, s, thr)
			}
		}
	}
	return h
}

// pushBest offers s to h, a min-heap of at most k hits, and returns the
// heap and the score a slot needs to be offered next (thr until h holds
// k hits, then the worst of them).
func pushBest(h []Hit, k int, s accSlot, thr float64) ([]Hit, float64) {
	hit := Hit{Doc: s.doc, Score: s.score}
	if len(h) < k {
		h = append(h, hit)
		up(h, len(h)-1)
	} else if better(hit, h[0]) {
		h[0] = hit
		down(h, 0)
	}
	if len(h) == k {
		thr = h[0].Score
	}
	return h, thr
}

// heap helpers: the root is the worst hit.
func up(h []Hit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func down(h []Hit, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		worst := l
		if r := l + 1; r < len(h) && better(h[l], h[r]) {
			worst = r
		}
		if !better(h[i], h[worst]) {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// rangeBits sets the width of the document ranges scoreSorted scores one
// at a time: 4,096 documents, whose scores (32 KiB) stay in the L1 cache.
const rangeBits = 12

// rangeBuf holds the scores of one range, by doc − base, their coverages
// when coordination is on, and a bit per document that has one (all zero
// between uses), and the documents scored so far.
type rangeBuf struct {
	score  [1 << rangeBits]float64
	has    [1 << rangeBits / 64]uint64
	scored []accSlot
	cov    [1 << rangeBits]float64
	memo   coordMemo
	// The memory of the lists and weights a search passes (MemIndex.withLists).
	lists [][]Posting
	idfs  []float64
}

// rangeBuf returns a rangeBuf from the scorer's pool, for scoreSorted.
func (s *Scorer) rangeBuf() *rangeBuf {
	if buf, ok := s.ranges.Get().(*rangeBuf); ok {
		return buf
	}
	return new(rangeBuf)
}

// putRangeBuf returns buf to the pool, without the posting lists it was
// given.
func (s *Scorer) putRangeBuf(buf *rangeBuf) {
	clear(buf.lists)
	buf.lists, buf.idfs = buf.lists[:0], buf.idfs[:0]
	s.ranges.Put(buf)
}

// scoreSorted returns best(k, floor) of the accumulator that adding
// idfs[i]·sat.of(p) for every posting p of lists[i], list after list,
// would fill, coordinated (accum.coordinate) with exponent e when e > 0
// (norm: the query's weight): the
// same documents with the same scores, bit for bit (each document's
// contributions, and its coverage, are added in the same order: list
// after list). The lists must be sorted by Doc. Instead of a hash table it
// scores the documents range by range, in a small array indexed by doc,
// and needs no table as large as the postings: a document's range is
// read from every list before the next range is. A document's
// coordination factor (≤ 1) is computed only when its score is at the
// threshold a document needs to be kept, or above.
// buf is its working memory (rangeBuf).
func (s *Scorer) scoreSorted(buf *rangeBuf, lists [][]Posting, idfs []float64, sat *saturation, e, norm float64, k int, floor float64) []Hit {
	const width = 1 << rangeBits
	var memo *coordMemo
	if e > 0 {
		buf.memo = newCoordMemo(norm, e)
		memo = &buf.memo
	}
	var curBuf [64]int
	cur := curBuf[:0]
	if len(lists) > len(curBuf) {
		cur = make([]int, 0, len(lists))
	}
	cur = cur[:len(lists)]
	clear(cur)
	// Every document at floor or above, then the k best of them (with k ≤ 0,
	// all: straight into the result). For a k too small for bestSlots to
	// sample, its heap is fed as the documents come, with the threshold it
	// would have: the same offers, in the same order.
	var all []Hit
	scored := buf.scored[:0]
	defer func() { buf.scored = scored[:0] }()
	direct := k > 0 && k < estimateMinK
	thr := floor
	if direct {
		all = make([]Hit, 0, k)
	}
	for {
		// The next range: the one of the least document not read yet.
		lo, more := uint64(0), false
		for i, l := range lists {
			if c := cur[i]; c < len(l) && (!more || l[c].Doc < lo) {
				lo, more = l[c].Doc, true
			}
		}
		if !more {
			if k <= 0 || direct {
				return all
			}
			return bestSlots(scored, k, floor)
		}
		base := lo &^ (width - 1)
		for i, l := range lists {
			idf, c := idfs[i], cur[i]
			if memo != nil {
				for ; c < len(l); c++ {
					p := &l[c]
					off := p.Doc - base
					if off >= width {
						break
					}
					if v := sat.of(p.TF, p.Len); v > 0 {
						buf.score[off] += idf * v
						buf.cov[off] += idf
						buf.has[off>>6] |= 1 << (off & 63)
					}
				}
			} else {
				for ; c < len(l); c++ {
					p := &l[c]
					off := p.Doc - base
					if off >= width {
						break
					}
					if v := sat.of(p.TF, p.Len); v > 0 {
						buf.score[off] += idf * v
						buf.has[off>>6] |= 1 << (off & 63)
					}
				}
			}
			cur[i] = c
		}
		for w, bits := range buf.has {
			for bits != 0 {
				off := w<<6 | mathbits.TrailingZeros64(bits)
				bits &= bits - 1
				score := buf.score[off]
				buf.score[off] = 0
				if memo != nil {
					// (Below thr, coordinated or not, it is not kept.)
					if score >= thr {
						score *= memo.factor(buf.cov[off])
					}
					buf.cov[off] = 0
				}
				switch {
				case score < thr:
				case direct:
					all, thr = pushBest(all, k, accSlot{doc: base + uint64(off), score: score}, thr)
				case k <= 0:
					all = append(all, Hit{Doc: base + uint64(off), Score: score})
				default:
					scored = append(scored, accSlot{doc: base + uint64(off), score: score})
				}
			}
			buf.has[w] = 0
		}
	}
}
