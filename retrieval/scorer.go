package retrieval

// The Scorer and its search: the query analysed into weighted terms, the
// needed terms scanned into an accumulator, the deferred ones rescored for
// the best candidates, the relevance floor applied.

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Scorer ranks documents of a Source for a query. Safe for concurrent use.
type Scorer struct {
	a      *Analyzer
	p      Params
	pools  [48]sync.Pool               // *accum by log2 of table size
	blocks sync.Pool                   // *[blockSize]Posting: Postings buffered in blocks
	stats  atomic.Pointer[statsTables] // the last statistics' tables made
	ranges sync.Pool                   // *rangeBuf: scoreSorted's range
}

// NewScorer returns a scorer using a to analyse queries.
func NewScorer(a *Analyzer, p Params) *Scorer { return &Scorer{a: a, p: p} }

// Params returns the scorer's parameters.
func (s *Scorer) Params() Params { return s.p }

type queryTerm struct {
	term string
	df   int64
	idf  float64 // weighted: the term's full contribution at saturation 1
	n    int32   // occurrences in the query (while the weights are set)
	// memID is 1 + the term's id in the *MemIndex searched, which its
	// docFreqs sets (0: not known), so that its lists are then found
	// without looking the term up again.
	memID uint32
	// digits: a digit group of a compound the query holds ("12" and "04"
	// of "12.04"), weighed as the compound's whole is (CompoundWeight).
	digits bool
}

// termIDF is the weighted idf of term t with document frequency df among n
// documents, and whether t is a CJK term.
func (p *Params) termIDF(t string, n, df float64) (float64, bool) {
	return p.weighTerm(t, p.raisedIDF(n, df))
}

// raisedIDF is the idf of a term with document frequency df among n
// documents, raised to IDFExponent.
func (p *Params) raisedIDF(n, df float64) float64 {
	v := idf(n, df)
	if p.IDFExponent > 0 && p.IDFExponent != 1 {
		v = math.Pow(v, p.IDFExponent)
	}
	return v
}

// weighTerm is termIDF from term t's raised idf v.
func (p *Params) weighTerm(t string, v float64) (float64, bool) {
	if p.CompoundWeight > 0 && isCompound(t) {
		v *= p.CompoundWeight
	}
	r, size := utf8.DecodeRuneInString(t)
	if !isCJK(r) {
		return v, false
	}
	if p.CJKWeight > 0 {
		v *= p.CJKWeight
	}
	if len(t) > size && p.CJKBigramWeight > 0 {
		v *= p.CJKBigramWeight
	}
	return v, true
}

// ctxCheckEvery is how many postings pass between context checks.
const ctxCheckEvery = 4096

// Search returns the k best documents for query, best first (ties: lower
// Doc first); k ≤ 0 returns every matching document, exactly scored (the
// PostingBudget does not apply). Only the postings of the
// query's distinct terms are read (and, with a PostingBudget, only those of
// its rarer terms). An empty or all-stopword query returns no hits. If ctx is
// cancelled the search stops and returns ctx.Err().
func (s *Scorer) Search(ctx context.Context, src Source, query string, k int) ([]Hit, error) {
	return s.SearchMin(ctx, src, query, k, 0)
}

// SearchMin is Search restricted to the documents whose Relevance is at
// least minRelevance (≤ 0 or NaN: no floor): the k best of them. A document that matches only
// query terms whose weights sum below the floor's score cannot reach it
// (every term adds less than its weight), so the postings of the
// commonest terms whose weights together stay under it are not read:
// they are deferred, as the PostingBudget defers terms, and scored for
// the RescoreDepth best candidates that can still pass. With no term
// deferred by the budget and at most RescoreDepth such candidates, the
// result is exactly Search's hits above the floor; otherwise a document
// could be missed only if its deferred terms would lift it past more
// than RescoreDepth others.
func (s *Scorer) SearchMin(ctx context.Context, src Source, query string, k int, minRelevance float64) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.searchTerms(ctx, src, s.a.Terms(query), k, minRelevance)
}

// SearchTerms is SearchMin for a query analysed already: terms are the
// query's as the scorer's Analyzer gives them (Analyzer.Terms), repeats
// included: a repeated term weighs more (Params.K3). terms is not
// modified. A caller that needs the terms itself, to fetch their postings
// say, analyses the query only once; the hits are SearchMin's, bit for
// bit.
func (s *Scorer) SearchTerms(ctx context.Context, src Source, terms []string, k int, minRelevance float64) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.searchTerms(ctx, src, terms, k, minRelevance)
}

// searchTerms is SearchTerms.
func (s *Scorer) searchTerms(ctx context.Context, src Source, terms []string, k int, minRelevance float64) ([]Hit, error) {
	if !(minRelevance > 0) { // (NaN too)
		minRelevance = 0
	}
	if len(terms) == 0 {
		return nil, nil
	}
	st, err := src.Stats(ctx)
	if err != nil {
		return nil, err
	}
	if st.Docs <= 0 {
		return nil, nil
	}
	tabs := s.tables(st)
	// The query's distinct terms, in an array on the stack when they fit.
	var qtBuf [48]queryTerm
	qts := qtBuf[:0]
	if len(terms) > len(qtBuf) {
		qts = make([]queryTerm, 0, len(terms))
	}
	qts = countTerms(qts, terms)
	markDigitGroups(qts)
	var norm, cjk float64
	found := 0 // qts[:found]: the terms some document holds
	var dfBuf [64]int64
	dfs, err := docFreqs(ctx, src, qts, dfBuf[:0])
	if err != nil {
		return nil, err
	}
	for i, q := range qts {
		df := min(max(dfs[i], 0), st.Docs)
		w, isCJK := s.p.weighTerm(q.term, tabs.raisedIDF(&s.p, df))
		w *= s.p.repeatWeight(int(q.n))
		if q.digits && s.p.CompoundWeight > 0 {
			w *= s.p.CompoundWeight
		}
		norm += w
		if isCJK {
			cjk += w
		}
		if df > 0 {
			qts[found] = queryTerm{term: q.term, df: df, idf: w, memID: q.memID}
			found++
		}
	}
	qts = qts[:found]
	if len(qts) == 0 {
		return nil, nil
	}
	// Rarest first; the order also fixes the summation order of every
	// document's score, so all code paths give bit-identical scores.
	sortRarestFirst(qts)
	share := s.p.cjkShare(norm, cjk)
	rc := s.p.calibration(norm, share)

	// floor is the least score (raw or coordinated: coordination only
	// lowers it) of a document that can pass minRelevance, less a margin
	// for rounding; Relevance itself decides at the end. limit is the
	// number of rarest terms a passing document must match at least one
	// of: the rest weigh less than floor together.
	floor := 0.0
	limit := len(qts)
	if minRelevance > 0 {
		floor = rc.score(minRelevance) * (1 - 1e-9)
		var rest float64
		for limit > 0 && rest+qts[limit-1].idf < floor {
			limit--
			rest += qts[limit].idf
		}
		if limit == 0 {
			return nil, nil // the query's matched terms together cannot reach it
		}
	}
	scan := 0
	var cum int64
	exact := s.p.PostingBudget <= 0 || k <= 0
	for scan < limit && (scan == 0 || exact || cum+qts[scan].df <= s.p.PostingBudget) {
		cum += qts[scan].df
		scan++
	}

	sat := s.saturation(tabs)
	// Coordination: the exponent applied to the matched fraction of the
	// query's idf mass (zero: off).
	var coord float64
	if s.p.CJKCoord > 0 && share > 0 {
		coord = s.p.CJKCoord * share
	}
	// The candidates: the k best (all when k ≤ 0) at floor or above, or,
	// with terms deferred, the RescoreDepth best of the terms read that
	// can still reach it.
	K, candFloor := k, floor
	if scan < len(qts) {
		K, candFloor = max(s.p.RescoreDepth, k, 1), max(floor-sumIDF(qts[scan:]), 0)
	}
	var cands []Hit
	var acc *accum
	if m, ok := src.(*MemIndex); ok && (coord == 0 || scan == len(qts)) {
		// Its lists are sorted by Doc: scored range by range, in a small
		// array rather than a hash table, and coordinated there when no
		// term is deferred (the deferred terms' rescoring needs each
		// candidate's coverage: that goes through the table).
		buf := s.rangeBuf()
		cands, err = m.withLists(ctx, qts[:scan], buf.lists, buf.idfs, func(lists [][]Posting, idfs []float64) []Hit {
			buf.lists, buf.idfs = lists, idfs // (their memory, for the next search)
			return s.scoreSorted(buf, lists, idfs, &sat, coord, norm, K, candFloor)
		})
		s.putRangeBuf(buf)
		if err != nil {
			return nil, err
		}
		if scan == len(qts) {
			for i := range cands {
				cands[i].Relevance = rc.of(cands[i].Score)
			}
			sortHits(cands)
			return above(cands, minRelevance), nil
		}
	} else {
		acc = s.getAccum(int(min(cum, st.Docs)), coord > 0)
		defer s.putAccum(acc)
		acc.sat = sat
		for _, q := range qts[:scan] {
			acc.idf = q.idf
			err := s.scanBlocks(ctx, src, q.term, acc.addTerm)
			if err != nil {
				return nil, err
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if scan == len(qts) {
			acc.coordinate(k, coord, norm)
			return above(acc.top(k, rc, floor), minRelevance), nil
		}
		cands = acc.best(K, candFloor)
	}

	// Score the deferred terms for the RescoreDepth best candidates that
	// can still make it: a document whose score so far plus the most the
	// terms still to score can add (Σ idf, as saturation < 1) stays below
	// floor, or below the k-th best score so far, cannot pass or reach the
	// top k, and is dropped. A source that walks a list per term is asked
	// for one term at a time, heaviest first, with the drop in between
	// (MaxScore); the result is the same either way.
	var covs []float64
	if coord > 0 {
		covs = make([]float64, len(cands))
		for i, c := range cands {
			covs[i] = acc.coverage(c.Doc)
		}
	}
	// A source that reads each document once, whatever the terms, scores
	// the deferred terms in one go.
	group := len(qts) - scan
	if r, ok := src.(TermFreqReader); !ok || perTerm(r) {
		group = 1
	}
	r := newRescorer(sat)
	for i := scan; i < len(qts); i += group {
		// (With coordination, final scores are not monotone in partial
		// scores: floor only.)
		need := floor
		if k > 0 && len(cands) > k && coord == 0 {
			need = max(need, kthScore(cands, k))
		}
		cands, covs = prune(cands, covs, sumIDF(qts[i:]), need)
		if len(cands) == 0 {
			return nil, nil
		}
		if i == scan {
			// In doc order for the lookups of rescore (pruning keeps it).
			sortByDoc(cands, covs)
		}
		if err := s.rescore(ctx, src, r, cands, covs, qts[i:min(i+group, len(qts))]); err != nil {
			return nil, err
		}
	}
	if coord > 0 {
		memo := newCoordMemo(norm, coord)
		for i := range cands {
			cands[i].Score *= memo.factor(covs[i])
		}
	}
	if minRelevance > 0 {
		j := 0
		for _, c := range cands {
			if c.Relevance = rc.of(c.Score); c.Relevance >= minRelevance {
				cands[j] = c
				j++
			}
		}
		cands = cands[:j]
	}
	cands = bestSorted(cands, k)
	if minRelevance <= 0 {
		for i := range cands {
			cands[i].Relevance = rc.of(cands[i].Score)
		}
	}
	return cands, nil
}

// bestSorted returns the k best of hits (all when k ≤ 0), best first, in
// hits' memory: a heap of the k best, then only those sorted.
func bestSorted(hits []Hit, k int) []Hit {
	if k <= 0 || len(hits) <= k {
		sortHits(hits)
		return hits
	}
	// hits[:k] becomes a heap whose root is the worst of the k best so far.
	for i := 1; i < k; i++ {
		up(hits[:i+1], i)
	}
	for _, h := range hits[k:] {
		if better(h, hits[0]) {
			hits[0] = h
			down(hits[:k], 0)
		}
	}
	hits = hits[:k]
	sortHits(hits)
	return hits
}

// docFreqs appends to dfs the document frequency of each term of qts: a
// *MemIndex looks them all up under one lock.
func docFreqs(ctx context.Context, src Source, qts []queryTerm, dfs []int64) ([]int64, error) {
	if m, ok := src.(*MemIndex); ok {
		return m.docFreqs(ctx, qts, dfs)
	}
	for _, q := range qts {
		df, err := src.DocFreq(ctx, q.term)
		if err != nil {
			return nil, err
		}
		dfs = append(dfs, df)
	}
	return dfs, nil
}

// rarer is the order of a search's terms: by df, then term.
func rarer(a, b queryTerm) bool {
	return a.df < b.df || a.df == b.df && a.term < b.term
}

// sortRarestFirst sorts qts by rarer: by insertion for a query's usual few
// dozen terms (no comparison function to call), else with
// slices.SortFunc.
func sortRarestFirst(qts []queryTerm) {
	if len(qts) > 48 {
		slices.SortFunc(qts, func(a, b queryTerm) int {
			switch {
			case rarer(a, b):
				return -1
			case rarer(b, a):
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(qts); i++ {
		q := qts[i]
		j := i
		for ; j > 0 && rarer(q, qts[j-1]); j-- {
			qts[j] = qts[j-1]
		}
		qts[j] = q
	}
}

// prune keeps the hits (and their covs, when not nil) that can still reach
// need with bound more to come.
func prune(hits []Hit, covs []float64, bound, need float64) ([]Hit, []float64) {
	j := 0
	for i, h := range hits {
		if h.Score+bound >= need {
			hits[j] = h
			if covs != nil {
				covs[j] = covs[i]
			}
			j++
		}
	}
	if covs != nil {
		covs = covs[:j]
	}
	return hits[:j], covs
}

// sortByDoc sorts hits by Doc, and covs (when not nil) along.
func sortByDoc(hits []Hit, covs []float64) {
	if covs == nil && sortByDocKeys(hits) {
		return
	}
	if covs == nil {
		slices.SortFunc(hits, func(a, b Hit) int { return cmp.Compare(a.Doc, b.Doc) })
		return
	}
	type pair struct {
		h Hit
		c float64
	}
	ps := make([]pair, len(hits))
	for i := range hits {
		ps[i] = pair{hits[i], covs[i]}
	}
	slices.SortFunc(ps, func(a, b pair) int { return cmp.Compare(a.h.Doc, b.h.Doc) })
	for i, p := range ps {
		hits[i], covs[i] = p.h, p.c
	}
}

// sortByDocKeys sorts hits by Doc as one slice of integers, each a Doc
// shifted up with the hit's index in the low bits (no comparison function
// to call), and reports whether it could: every Doc must leave room for
// the index.
func sortByDocKeys(hits []Hit) bool {
	const maxHits = 1 << 12
	n := len(hits)
	if n > maxHits {
		return false
	}
	var buf [256]uint64
	keys := buf[:0]
	if n > len(buf) {
		keys = make([]uint64, 0, n)
	}
	for i, h := range hits {
		if h.Doc >= 1<<(64-12) {
			return false
		}
		keys = append(keys, h.Doc<<12|uint64(i))
	}
	slices.Sort(keys)
	var hbuf [256]Hit
	old := hbuf[:0]
	if n > len(hbuf) {
		old = make([]Hit, 0, n)
	}
	old = append(old, hits...)
	for i, key := range keys {
		hits[i] = old[key&(maxHits-1)]
	}
	return true
}

func sumIDF(qts []queryTerm) float64 {
	var sum float64
	for _, q := range qts {
		sum += q.idf
	}
	return sum
}

// kthScore is the k-th best score of hits (k ≤ len(hits)).
func kthScore(hits []Hit, k int) float64 {
	// A min-heap of the k best scores.
	h := make([]float64, 0, k)
	for _, c := range hits {
		switch {
		case len(h) < k:
			h = append(h, c.Score)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if h[p] <= h[i] {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
		case c.Score > h[0]:
			h[0] = c.Score
			for i := 0; ; {
				l, m := 2*i+1, i
				if l < k && h[l] < h[m] {
					m = l
				}
				if r := l + 1; r < k && h[r] < h[m] {
					m = r
				}
				if m == i {
					break
				}
				h[i], h[m] = h[m], h[i]
				i = m
			}
		}
	}
	return h[0]
}

// above returns the prefix of hits (best first) whose Relevance is at
// least min. Relevance is increasing in Score, so it is a prefix.
func above(hits []Hit, min float64) []Hit {
	if min <= 0 {
		return hits
	}
	n := len(hits)
	for n > 0 && hits[n-1].Relevance < min {
		n--
	}
	return hits[:n]
}

// markDigitGroups sets digits on the terms of qts that are a group of
// digits in a compound of qts: a version, an address or a date ("12.04",
// "127.0.0.1", "2014-06-24") is one token of meaning, and its groups on
// their own match any number ("12 GB", "Windows 10"), so they weigh as
// the whole does rather than as words.
func markDigitGroups(qts []queryTerm) {
	for _, c := range qts {
		if !isCompound(c.term) {
			continue
		}
		p := 0
		for k := 0; k <= len(c.term); k++ {
			if k < len(c.term) && !isJoinByte(c.term[k]) {
				continue
			}
			if part := c.term[p:k]; allDigits(part) {
				for i := range qts {
					if qts[i].term == part {
						qts[i].digits = true
					}
				}
			}
			p = k + 1
		}
	}
}

// allDigits reports whether s is a non-empty run of ASCII digits.
func allDigits(s string) bool {
	for k := 0; k < len(s); k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return s != ""
}

// countTerms appends to qts the distinct terms of ts, first occurrences
// in order, each with n, the number of times it occurs in ts.
func countTerms(qts []queryTerm, ts []string) []queryTerm {
	if len(ts) > countSlots/2 {
		at := make(map[string]int, len(ts))
		for _, t := range ts {
			if i, ok := at[t]; ok {
				qts[i].n++
				continue
			}
			at[t] = len(qts)
			qts = append(qts, queryTerm{term: t, n: 1})
		}
		return qts
	}
	// An open-addressing table of positions in qts (plus one; 0: empty),
	// on the stack.
	var slots [countSlots]uint8
	base := len(qts)
	for _, t := range ts {
		i := termHash(t) & (countSlots - 1)
		for {
			j := slots[i]
			if j == 0 {
				slots[i] = uint8(len(qts) - base + 1)
				qts = append(qts, queryTerm{term: t, n: 1})
				break
			}
			if q := &qts[base+int(j)-1]; q.term == t {
				q.n++
				break
			}
			i = (i + 1) & (countSlots - 1)
		}
	}
	return qts
}

// countSlots is the size of countTerms' table: up to half as many terms.
const countSlots = 256

// termHash is the FNV-1a hash of t, with its high bits folded into the
// low ones that countTerms' table uses.
func termHash(t string) uint64 {
	h := uint64(14695981039346656037)
	for k := 0; k < len(t); k++ {
		h ^= uint64(t[k])
		h *= 1099511628211
	}
	return h ^ h>>32
}

// calib maps a query's scores to Relevance: (Score/norm)^exp. The zero
// value maps every score to 0.
type calib struct {
	norm float64 // Σ w(t) over the query's terms
	exp  float64 // 1 − CJKCalibration·s, in (0,1]
}
