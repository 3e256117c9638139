package retrieval

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"unicode/utf8"
)

// Params tune BM25F and the cost bounds of Search.
type Params struct {
	// K1 is the term-frequency saturation constant.
	K1 float64
	// B is the length-normalisation strength of every field whose FieldB
	// entry is zero.
	B float64
	// FieldWeight multiplies a field's normalised term frequency.
	FieldWeight [NumFields]float64
	// FieldB, when an entry is non-zero, overrides B for that field (use a
	// tiny positive value for "no normalisation").
	FieldB [NumFields]float64
	// PostingBudget bounds the postings Search reads: query terms are taken
	// rarest first and their postings read while the running sum of their
	// document frequencies stays within the budget (the rarest term is
	// always read). The remaining, common terms are scored only for the
	// RescoreDepth best candidates. Zero means no bound (exact BM25F).
	PostingBudget int64
	// RescoreDepth is how many candidates the common terms are scored for
	// when PostingBudget defers some terms (at least the k asked for).
	RescoreDepth int
	// IDFExponent raises every idf to this power (0 means 1). Below 1 it
	// flattens the idf curve, so that one rare word (a typo, a name) weighs
	// less against several ordinary ones: short queries paraphrase, and
	// their rarest word is not always their topic.
	IDFExponent float64
	// CJKBigramWeight multiplies the idf of CJK character-pair terms (0
	// means 1). Pairs also match across word boundaries and repeat the
	// evidence of the characters they are made of, so they weigh less than
	// independent words.
	CJKBigramWeight float64
	// CJKCoord is the strength of the coordination factor for queries with
	// CJK text: a document's score is multiplied by min(1, 3c)^(CJKCoord·s),
	// where c is the fraction of the query's idf mass it matches and s the
	// share of that mass held by CJK terms (0 for English-only queries,
	// which are unaffected). Single characters carry little meaning on their
	// own, so a document matching a few strongly weighted characters of a
	// Chinese query is weaker evidence than its BM25 score says; one that
	// covers a third of the query is not penalised. 0 disables.
	CJKCoord float64
	// CJKCalibration bends the Relevance of queries with CJK text so that a
	// min_score threshold means the same as for English:
	// Relevance = (Score/Σw)^(1 − CJKCalibration·s), s the CJK share of the
	// query's idf mass (English-only queries are unaffected). The map is
	// increasing, so it never changes the ranking within a query. A Chinese
	// paraphrase shares far fewer of the query's terms (characters and,
	// above all, character pairs) than an English one shares words, so its
	// raw fraction is much lower for the same meaning. 0 disables; values
	// above 0.9 count as 0.9.
	CJKCalibration float64
}

// DefaultParams are the defaults tuned on the shared/eval dev sets (see
// cmd/memex-bench quality).
func DefaultParams() Params {
	return Params{
		K1:              1.4,
		B:               0.75,
		FieldWeight:     [NumFields]float64{2, 0.3},
		FieldB:          [NumFields]float64{0, 0.9},
		PostingBudget:   4096,
		RescoreDepth:    100,
		IDFExponent:     0.8,
		CJKBigramWeight: 0.5,
		CJKCoord:        1,
		CJKCalibration:  0.45,
	}
}

func (p Params) fieldB(f int) float64 {
	if p.FieldB[f] != 0 {
		return p.FieldB[f]
	}
	return p.B
}

// TermFreqReader is an optional Source capability: random access to the
// term frequencies of given documents. Search uses it to score deferred
// common terms (see Params.PostingBudget) for a few candidates without
// reading those terms' postings; without it, Search reads the postings and
// gets the same result more slowly.
type TermFreqReader interface {
	// TermFreqs calls fn once for each visible document of docs, in any
	// order, with tfs[i] the frequency of terms[i] in it (zero when absent)
	// and its field lengths. tfs is only valid during the call.
	TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(doc uint64, tfs []TF, lens [NumFields]uint32)) error
}

// Scorer ranks documents of a Source for a query. Safe for concurrent use.
type Scorer struct {
	a      *Analyzer
	p      Params
	pools  [48]sync.Pool // *accum by log2 of table size
	blocks sync.Pool     // *[blockSize]Posting: Postings buffered in blocks
	norms  sync.Pool     // *[NumFields][satLens]float64: saturation tables
}

// NewScorer returns a scorer using a to analyse queries.
func NewScorer(a *Analyzer, p Params) *Scorer { return &Scorer{a: a, p: p} }

// Params returns the scorer's parameters.
func (s *Scorer) Params() Params { return s.p }

type queryTerm struct {
	term string
	df   int64
	idf  float64 // weighted: the term's full contribution at saturation 1
}

// termIDF is the weighted idf of term t with document frequency df among n
// documents, and whether t is a CJK term.
func (p Params) termIDF(t string, n, df float64) (float64, bool) {
	v := idf(n, df)
	if p.IDFExponent > 0 && p.IDFExponent != 1 {
		v = math.Pow(v, p.IDFExponent)
	}
	r, size := utf8.DecodeRuneInString(t)
	if !isCJK(r) {
		return v, false
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
	return s.searchTerms(ctx, src, dedupe(s.a.Terms(query)), k, minRelevance)
}

// SearchTerms is SearchMin for a query analysed already: terms are the
// query's as the scorer's Analyzer gives them (Analyzer.Terms; repeats
// count once, and terms is not modified). A caller that needs the terms
// itself, to fetch their postings say, analyses the query only once; the
// hits are SearchMin's, bit for bit.
func (s *Scorer) SearchTerms(ctx context.Context, src Source, terms []string, k int, minRelevance float64) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.searchTerms(ctx, src, distinct(terms), k, minRelevance)
}

// searchTerms is SearchTerms for distinct terms.
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
	n := float64(st.Docs)
	qts := make([]queryTerm, 0, len(terms))
	var norm, cjk float64
	for _, t := range terms {
		df, err := src.DocFreq(ctx, t)
		if err != nil {
			return nil, err
		}
		df = min(max(df, 0), st.Docs)
		w, isCJK := s.p.termIDF(t, n, float64(df))
		q := queryTerm{term: t, df: df, idf: w}
		norm += w
		if isCJK {
			cjk += w
		}
		if df > 0 {
			qts = append(qts, q)
		}
	}
	if len(qts) == 0 {
		return nil, nil
	}
	// Rarest first; the order also fixes the summation order of every
	// document's score, so all code paths give bit-identical scores.
	slices.SortFunc(qts, func(a, b queryTerm) int { return cmp.Or(cmp.Compare(a.df, b.df), cmp.Compare(a.term, b.term)) })
	rc := s.p.calibration(norm, cjk)

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

	sat := s.saturation(st)
	defer s.putSaturation(sat)
	// Coordination: the exponent applied to the matched fraction of the
	// query's idf mass (zero: off).
	var coord float64
	if s.p.CJKCoord > 0 && cjk > 0 {
		coord = s.p.CJKCoord * cjk / norm
	}
	acc := s.getAccum(int(min(cum, st.Docs)), coord > 0)
	defer s.putAccum(acc)
	// (One closure for all the terms: it escapes to the Source.)
	var idf float64
	add := func(ps []Posting) {
		idf, sat := idf, &sat
		for _, p := range ps {
			if v := sat.of(p.TF, p.Len); v > 0 {
				acc.add(p.Doc, idf*v, idf)
			}
		}
	}
	for _, q := range qts[:scan] {
		idf = q.idf
		err := s.scanBlocks(ctx, src, q.term, add)
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

	// Score the deferred terms for the RescoreDepth best candidates that
	// can still make it: a document whose score so far plus the most the
	// terms still to score can add (Σ idf, as saturation < 1) stays below
	// floor, or below the k-th best score so far, cannot pass or reach the
	// top k, and is dropped. A source that walks a list per term is asked
	// for one term at a time, heaviest first, with the drop in between
	// (MaxScore); the result is the same either way.
	cands := acc.best(max(s.p.RescoreDepth, k, 1), max(floor-sumIDF(qts[scan:]), 0))
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
	r := newRescorer(&sat)
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
	j := 0
	for i, c := range cands {
		if coord > 0 {
			c.Score *= coordFactor(covs[i], norm, coord)
		}
		if c.Relevance = rc.of(c.Score); c.Relevance >= minRelevance {
			cands[j] = c
			j++
		}
	}
	cands = cands[:j]
	sortHits(cands)
	if k > 0 && len(cands) > k {
		cands = cands[:k]
	}
	return cands, nil
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

// TermFreqsPerTerm is an optional capability of a TermFreqReader whose
// TermFreqs costs in proportion to the terms asked for (it walks one
// posting list per term) rather than to the documents (a forward index
// reads each document once, whatever the terms). Search then asks for one
// deferred term at a time and drops, between terms, the candidates that
// can no longer make it.
type TermFreqsPerTerm interface {
	TermFreqsPerTerm() bool
}

func perTerm(r TermFreqReader) bool {
	p, ok := r.(TermFreqsPerTerm)
	return ok && p.TermFreqsPerTerm()
}

// rescorer adds the contributions of deferred terms to candidates (in
// doc order; covs, when not nil, gets the weights of the terms each
// contains). One serves every call of a search: its callbacks are made
// once, and its buffers reused.
type rescorer struct {
	cands []Hit
	covs  []float64
	terms []queryTerm
	sat   *saturation
	cur   docCursor
	idf   float64 // the term being read (postings path)
	docs  []uint64
	names []string
	byTF  func(doc uint64, tfs []TF, lens [NumFields]uint32)
	add   func([]Posting)
}

func newRescorer(sat *saturation) *rescorer {
	r := &rescorer{sat: sat}
	r.byTF = func(doc uint64, tfs []TF, lens [NumFields]uint32) {
		i, ok := r.cur.find(doc)
		if !ok {
			return
		}
		for j, q := range r.terms {
			if j < len(tfs) {
				if v := r.sat.of(tfs[j], lens); v > 0 {
					r.cands[i].Score += q.idf * v
					if r.covs != nil {
						r.covs[i] += q.idf
					}
				}
			}
		}
	}
	r.add = func(ps []Posting) {
		idf, sat := r.idf, r.sat
		for _, p := range ps {
			if i, ok := r.cur.find(p.Doc); ok {
				if v := sat.of(p.TF, p.Len); v > 0 {
					r.cands[i].Score += idf * v
					if r.covs != nil {
						r.covs[i] += idf
					}
				}
			}
		}
	}
	return r
}

// rescore adds the contributions of terms to cands, which are in doc
// order (and, when covs is not nil, their weights to the covs of those
// containing them).
func (s *Scorer) rescore(ctx context.Context, src Source, r *rescorer, cands []Hit, covs []float64, terms []queryTerm) error {
	r.cands, r.covs, r.terms = cands, covs, terms
	if tr, ok := src.(TermFreqReader); ok {
		r.docs = slices.Grow(r.docs[:0], len(cands))
		for _, c := range cands {
			r.docs = append(r.docs, c.Doc)
		}
		r.names = slices.Grow(r.names[:0], len(terms))
		for _, q := range terms {
			r.names = append(r.names, q.term)
		}
		r.cur = docCursor{hits: cands}
		return tr.TermFreqs(ctx, r.docs, r.names, r.byTF)
	}
	for _, q := range terms {
		r.idf, r.cur = q.idf, docCursor{hits: cands}
		if err := s.scanBlocks(ctx, src, q.term, r.add); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// docCursor finds documents in hits (sorted by Doc, distinct). Asked in
// ascending order (TermFreqs and posting lists in doc order), it merges:
// it gallops forward from the last document asked, usually a step or two.
// Asked for a lower document, it binary-searches. Either way the answer
// is the same.
type docCursor struct {
	hits []Hit
	i    int // the first of hits whose Doc is ≥ the last document asked
}

// find returns the index of doc in hits and whether it is there.
func (c *docCursor) find(doc uint64) (int, bool) {
	h, i := c.hits, c.i
	switch {
	case i > 0 && h[i-1].Doc >= doc: // out of order
		i, _ = slices.BinarySearchFunc(h[:i], doc, func(h Hit, d uint64) int { return cmp.Compare(h.Doc, d) })
	case i < len(h) && h[i].Doc < doc:
		// h[lo].Doc < doc; gallop to hi with h[hi].Doc ≥ doc (or the end),
		// then bisect.
		lo, step := i, 1
		hi := lo + step
		for hi < len(h) && h[hi].Doc < doc {
			lo = hi
			step *= 2
			hi = lo + step
		}
		hi = min(hi, len(h))
		for hi-lo > 1 {
			m := int(uint(lo+hi) >> 1)
			if h[m].Doc < doc {
				lo = m
			} else {
				hi = m
			}
		}
		i = hi
	}
	c.i = i
	return i, i < len(h) && h[i].Doc == doc
}

// blockSize is how many postings the scorer buffers, per block, from a
// Source without a block scan.
const blockSize = 256

// scanBlocks calls fn with the postings of term in blocks: through the
// block scan of a *MemIndex itself (never of a type embedding one: see
// PostingScanner) or of a PostingScanner, else through Postings, buffered,
// with the context checked every ctxCheckEvery postings. Every path of the
// scorer reads postings through it, so they all score a posting with the
// same code.
func (s *Scorer) scanBlocks(ctx context.Context, src Source, term string, fn func([]Posting)) error {
	switch b := src.(type) {
	case *MemIndex:
		return b.scanPostings(ctx, term, fn)
	case PostingScanner:
		return b.ScanPostings(ctx, term, fn)
	}
	buf, _ := s.blocks.Get().(*[blockSize]Posting)
	if buf == nil {
		buf = new([blockSize]Posting)
	}
	defer s.blocks.Put(buf)
	n, seen := 0, 0
	var cancelled error
	err := src.Postings(ctx, term, func(p Posting) bool {
		buf[n] = p
		if n++; n == blockSize {
			fn(buf[:])
			n = 0
		}
		if seen++; seen%ctxCheckEvery == 0 {
			if cancelled = ctx.Err(); cancelled != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if cancelled != nil {
		return cancelled
	}
	if n > 0 {
		fn(buf[:n])
	}
	return nil
}

// satLens bounds the field lengths whose normalisation a search
// precomputes: nearly all (longer fields compute it per posting, with the
// same operations).
const satLens = 256

// saturation computes the BM25F term saturation of a posting.
type saturation struct {
	c0, c1, w [NumFields]float64
	k1        float64
	// norm[f][l] is fieldNorm(f, l) for l < satLens: one division per
	// posting (in of) instead of one more per field.
	norm *[NumFields][satLens]float64
}

func (s *Scorer) saturation(st Stats) saturation {
	var sat saturation
	n := float64(st.Docs)
	for f := range NumFields {
		avg := float64(st.TotalLen[f]) / n
		if avg <= 0 {
			avg = 1
		}
		b := s.p.fieldB(f)
		sat.c0[f] = 1 - b
		sat.c1[f] = b / avg
		sat.w[f] = s.p.FieldWeight[f]
	}
	sat.k1 = s.p.K1
	sat.norm, _ = s.norms.Get().(*[NumFields][satLens]float64)
	if sat.norm == nil {
		sat.norm = new([NumFields][satLens]float64)
	}
	for f := range NumFields {
		for l := range uint32(satLens) {
			v := sat.computeNorm(f, l)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				v = 0
			}
			sat.norm[f][l] = v
		}
	}
	return sat
}

func (s *Scorer) putSaturation(sat saturation) { s.norms.Put(sat.norm) }

// computeNorm is w_f/(1-b_f+b_f·l/avglen_f): field f's weight over its
// length normalisation at length l.
func (s *saturation) computeNorm(f int, l uint32) float64 {
	return s.w[f] / (s.c0[f] + s.c1[f]*float64(l))
}

// fieldNorm is computeNorm(f, l), from the table when l < satLens. It is
// always finite (for b_f in [0,1]: the table holds 0 where computeNorm is
// not, b_f = 1 at l = 0, a length no field holding a term has), so a field
// without the term adds exactly 0·norm = 0.
func (s *saturation) fieldNorm(f int, l uint32) float64 {
	if l < satLens {
		return s.norm[f][l]
	}
	return s.computeNorm(f, l)
}

// of returns tf'/(tf'+k1) with tf' = Σ_f tf_f·w_f/(1-b_f+b_f·len_f/avglen_f),
// evaluated as Σ_f tf_f·fieldNorm(f, len_f) whatever the path. A field
// without the term adds 0·norm, without a branch: which fields hold a term
// is unpredictable from one posting to the next.
func (s *saturation) of(tf TF, lens [NumFields]uint32) float64 {
	var t float64
	for f := range NumFields {
		t += float64(tf[f]) * s.fieldNorm(f, lens[f])
	}
	if t <= 0 {
		return 0
	}
	return t / (t + s.k1)
}

// coordFull is the share of the query's idf mass from which a document's
// coverage is not penalised by coordination: a Chinese paraphrase rarely
// shares more than a third of the query's characters and pairs, so
// coordination separates weak partial matches from plausible ones rather
// than ranking plausible ones by coverage (and it leaves their Relevance,
// which min_score thresholds, unchanged).
const coordFull = 1.0 / 3

// coordFactor is min(1, cov/(coordFull·norm))^e: the coordination factor of
// a document that matches cov of the query's idf mass norm.
func coordFactor(cov, norm, e float64) float64 {
	full := coordFull * norm
	if full <= 0 || cov >= full {
		return 1
	}
	return math.Pow(cov/full, e)
}

// idf is the BM25 inverse document frequency, always positive.
func idf(n, df float64) float64 {
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// distinct returns ts without repeats, keeping first occurrences in
// order: ts itself when it has none, else a copy (ts is not modified).
func distinct(ts []string) []string {
	if len(ts) <= 16 {
		for i, t := range ts {
			if slices.Contains(ts[:i], t) {
				return dedupe(slices.Clone(ts))
			}
		}
		return ts
	}
	return dedupe(slices.Clone(ts))
}

// dedupe removes repeated terms, keeping first occurrences in order.
func dedupe(ts []string) []string {
	if len(ts) <= 16 {
		out := ts[:0]
	outer:
		for _, t := range ts {
			for _, o := range out {
				if o == t {
					continue outer
				}
			}
			out = append(out, t)
		}
		return out
	}
	seen := make(map[string]struct{}, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

// calib maps a query's scores to Relevance: (Score/norm)^exp. The zero
// value maps every score to 0.
type calib struct {
	norm float64 // Σ w(t) over the query's terms
	exp  float64 // 1 − CJKCalibration·s, in (0,1]
}

// calibration returns the map of a query whose terms weigh norm in all,
// cjk of it in CJK terms.
func (p Params) calibration(norm, cjk float64) calib {
	c := calib{norm: norm, exp: 1}
	if e := min(max(p.CJKCalibration, 0), 0.9); e > 0 && norm > 0 {
		c.exp = 1 - e*cjk/norm
	}
	return c
}

// score is the least score whose Relevance is r (r in (0,1]): the inverse
// of of.
func (c calib) score(r float64) float64 {
	if c.exp != 1 {
		r = math.Pow(r, 1/c.exp)
	}
	return c.norm * r
}

func (c calib) of(score float64) float64 {
	if c.norm <= 0 {
		return 0
	}
	r := min(max(score/c.norm, 0), 1)
	if c.exp != 1 {
		r = math.Pow(r, c.exp)
	}
	return r
}

// better reports whether a ranks before b.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc < b.Doc
}

func sortHits(hits []Hit) {
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Doc, b.Doc))
	})
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
	var theta float64
	if k > 0 && len(a.touched) > 8*k {
		theta = a.threshold(k, e, norm)
	}
	for _, i := range a.touched {
		if s := &a.slots[i]; s.score >= theta {
			s.score *= coordFactor(a.covs[i], norm, e)
		}
	}
}

// threshold returns a lower bound of the k-th best coordinated score (k ≤
// len(a.touched)): the k-th best among the 4k best uncoordinated scores,
// coordinated.
func (a *accum) threshold(k int, e, norm float64) float64 {
	hs := a.top(4*k, calib{}, 0)
	for i := range hs {
		hs[i].Score *= coordFactor(a.coverage(hs[i].Doc), norm, e)
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
	n := len(a.touched)
	if k < 16 || n <= 4*k {
		return 0
	}
	step := n / (2 * k)
	r := (3*k + 2*step - 1) / (2 * step) // ⌈1.5k/step⌉ ≥ 1
	// The r best of the sample, best first (r is small: k/(n/2k)).
	best := make([]float64, 0, r)
	for i := 0; i < n; i += step {
		v := a.slots[a.touched[i]].score
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
