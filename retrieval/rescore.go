package retrieval

// Rescoring the deferred (common) terms for the candidates only, and the
// block scan of a term's postings.

import (
	"cmp"
	"context"
	"slices"
)

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
	terms []queryTerm // a copy of the terms being scored
	sat   saturation
	cur   docCursor
	idf   float64 // the term being read (postings path)
	docs  []uint64
	names []string
	byTF  func(doc uint64, tfs []TF, lens [NumFields]uint32)
	add   func([]Posting)
}

func newRescorer(sat saturation) *rescorer {
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
		idf, sat := r.idf, &r.sat
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
	// (terms is copied: the search's terms can then stay on its stack.)
	r.cands, r.covs, r.terms = cands, covs, append(r.terms[:0], terms...)
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

// satLens bounds the field lengths whose normalisation the statistics'
// tables hold: nearly all, long answers included (a longer field computes
// it per posting, with the same operations: a second division). The table
// is made once per statistics (2,048 divisions).
const satLens = 1024
