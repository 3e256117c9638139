package retrieval

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// blockIndex is a MemIndex seen through Postings and a PostingScanner
// only (no TermFreqReader: deferred terms are rescored from blocks too),
// whose blocks are of irregular sizes and, with shuffle, in no order.
type blockIndex struct {
	m       *MemIndex
	shuffle bool
	scans   *int // ScanPostings calls
}

func (b blockIndex) Stats(ctx context.Context) (Stats, error) { return b.m.Stats(ctx) }
func (b blockIndex) DocFreq(ctx context.Context, t string) (int64, error) {
	return b.m.DocFreq(ctx, t)
}
func (b blockIndex) Postings(ctx context.Context, t string, fn func(Posting) bool) error {
	panic("Postings read although the source scans blocks")
}
func (b blockIndex) ScanPostings(ctx context.Context, t string, fn func([]Posting)) error {
	*b.scans++
	var ps []Posting
	if err := b.m.Postings(ctx, t, func(p Posting) bool { ps = append(ps, p); return true }); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(len(ps)), 3))
	if b.shuffle {
		r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	} else {
		slices.SortFunc(ps, func(a, b Posting) int { return cmp.Compare(a.Doc, b.Doc) })
	}
	for len(ps) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(ps), 1+r.IntN(9))
		blk := slices.Clone(ps[:n])
		fn(blk)
		clear(blk) // fn must not keep it
		ps = ps[n:]
	}
	return ctx.Err()
}

// shuffledTermFreqs is a MemIndex whose TermFreqs calls back in no order
// (and is asked for one term at a time).
type shuffledTermFreqs struct{ *MemIndex }

func (shuffledTermFreqs) TermFreqsPerTerm() bool { return true }

func (s shuffledTermFreqs) TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(uint64, []TF, [NumFields]uint32)) error {
	docs = slices.Clone(docs)
	rand.New(rand.NewPCG(uint64(len(docs)), 4)).Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	docs = append(docs, 1<<40) // an unknown doc
	for _, d := range docs {
		if err := s.MemIndex.TermFreqs(ctx, []uint64{d}, terms, fn); err != nil {
			return err
		}
	}
	return nil
}

// TestSearchSameThroughBlocksAndPostings: a search scores the same, bit
// for bit, whether it reads a list through Postings one posting at a time,
// through a PostingScanner's blocks (in doc order or not), or through a
// *MemIndex's own block scan; and whether TermFreqs calls back in doc order
// or not.
func TestSearchSameThroughBlocksAndPostings(t *testing.T) {
	en, enQueries := randomCorpus(t, 600, 11)
	zh, zhQueries := randomCJKCorpus(t, 400, 12)
	ctx := context.Background()
	budget := DefaultParams()
	budget.PostingBudget, budget.RescoreDepth = 100, 10 // deferred terms, rescored
	scans := 0
	for _, p := range []Params{DefaultParams(), budget} {
		s := NewScorer(NewAnalyzer(), p)
		for _, c := range []struct {
			idx     *MemIndex
			queries []string
		}{{en, enQueries}, {zh, zhQueries}} {
			for _, q := range c.queries {
				for _, minRel := range []float64{0, 0.2} {
					for _, k := range []int{0, 5} {
						want, err := s.SearchMin(ctx, postingsOnly{c.idx}, q, k, minRel)
						if err != nil {
							t.Fatal(err)
						}
						for _, src := range []Source{
							c.idx,
							blockIndex{c.idx, false, &scans},
							blockIndex{c.idx, true, &scans},
							shuffledTermFreqs{c.idx},
						} {
							got, err := s.SearchMin(ctx, src, q, k, minRel)
							if err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(got, want) {
								t.Fatalf("%q k %d min %.1f: %T %v, Postings %v", q, k, minRel, src, got, want)
							}
						}
					}
				}
			}
		}
	}
	if scans == 0 {
		t.Fatal("ScanPostings never called")
	}
}

func TestScanPostingsCancelled(t *testing.T) {
	idx, queries := randomCorpus(t, 300, 13)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	scans := 0
	s := NewScorer(NewAnalyzer(), DefaultParams())
	// (SearchMin checks ctx first; the scan itself must stop too.)
	err := s.scanBlocks(ctx, blockIndex{idx, false, &scans}, NewAnalyzer().Terms(queries[0])[0], func([]Posting) {
		t.Error("block after cancel")
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestDocCursor checks the cursor against a binary search, asked in doc
// order (a merge), in reverse and at random, for present and absent docs.
func TestDocCursor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		hits := make([]Hit, 0, n)
		for d := uint64(0); len(hits) < n; d++ {
			if r.IntN(3) == 0 {
				hits = append(hits, Hit{Doc: d})
			}
		}
		top := uint64(3*n + 5)
		asc := make([]uint64, 0, top)
		for d := range top {
			if r.IntN(4) == 0 {
				asc = append(asc, d, d) // a repeat
			} else if r.IntN(2) == 0 {
				asc = append(asc, d)
			}
		}
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		random := slices.Clone(asc)
		r.Shuffle(len(random), func(i, j int) { random[i], random[j] = random[j], random[i] })
		for name, seq := range map[string][]uint64{"ascending": asc, "descending": desc, "random": random} {
			c := docCursor{hits: hits}
			for _, d := range seq {
				i, ok := c.find(d)
				wi, wok := slices.BinarySearchFunc(hits, d, func(h Hit, d uint64) int { return cmp.Compare(h.Doc, d) })
				if ok != wok || ok && i != wi {
					t.Fatalf("n %d %s: find(%d) = %d %v, want %d %v", n, name, d, i, ok, wi, wok)
				}
			}
		}
	}
}

// TestSearchTermsSameAsSearchMin: the hits of an analysed query are
// SearchMin's, and the terms passed are not modified.
func TestSearchTermsSameAsSearchMin(t *testing.T) {
	idx, queries := randomCorpus(t, 500, 14)
	a := NewAnalyzer()
	s := NewScorer(a, DefaultParams())
	ctx := context.Background()
	queries = append(queries, "alpha alpha beta alpha", "", "the of")
	for _, q := range queries {
		for _, minRel := range []float64{0, 0.2} {
			want, err := s.SearchMin(ctx, idx, q, 10, minRel)
			if err != nil {
				t.Fatal(err)
			}
			terms := a.Terms(q)
			orig := slices.Clone(terms)
			got, err := s.SearchTerms(ctx, idx, terms, 10, minRel)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%q: SearchTerms %v, SearchMin %v", q, got, want)
			}
			if !slices.Equal(terms, orig) {
				t.Fatalf("%q: terms modified: %q, was %q", q, terms, orig)
			}
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.SearchTerms(ctx2, idx, []string{"alpha"}, 10, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

// TestSaturationEmptyFieldFullNormalisation: with b = 1 an empty field's
// normalisation is infinite; a document matching in its other field
// still scores (finite), as it did when a field without the term was
// skipped rather than multiplied by 0.
func TestSaturationEmptyFieldFullNormalisation(t *testing.T) {
	p := DefaultParams()
	p.FieldB = [NumFields]float64{1, 1}
	idx := newIndex(t, append([][2]string{{"kernel panic on boot", ""}, {"", "kernel panic on boot"}}, filler()...)...)
	hits := search(t, NewScorer(NewAnalyzer(), p), idx, "kernel panic", 10)
	if got := docs(hits); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("hits %v, want docs 1 then 2", hits)
	}
	for _, h := range hits {
		if !(h.Score > 0) || !(h.Relevance > 0) {
			t.Errorf("hit %+v: want a positive finite score", h)
		}
	}
}

// TestFieldNormTableSameAsComputed: the saturation's table of field
// normalisations holds, bit for bit, what is computed per posting beyond
// it (a field of satLens terms or more), so a document scores the same
// whichever side of the table's end its lengths fall.
func TestFieldNormTableSameAsComputed(t *testing.T) {
	s := NewScorer(NewAnalyzer(), DefaultParams())
	tabs := s.tables(Stats{Docs: 1234, TotalLen: [NumFields]int64{1234 * 11, 1234 * 97}})
	sat := s.saturation(tabs)
	for f := range NumFields {
		for l := uint32(1); l < satLens+64; l++ {
			if got, want := sat.fieldNorm(f, l), sat.computeNorm(f, l); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("field %d length %d: table %v, computed %v", f, l, got, want)
			}
		}
	}
}
