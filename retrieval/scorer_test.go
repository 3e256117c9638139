package retrieval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func newIndex(tb testing.TB, qas ...[2]string) *MemIndex {
	tb.Helper()
	idx := NewMemIndex(NewAnalyzer())
	for i, qa := range qas {
		idx.Add(uint64(i+1), qa[0], qa[1])
	}
	return idx
}

func search(tb testing.TB, s *Scorer, src Source, q string, k int) []Hit {
	tb.Helper()
	hits, err := s.Search(context.Background(), src, q, k)
	if err != nil {
		tb.Fatal(err)
	}
	return hits
}

// scoreOf is the score of doc among hits; the test fails when doc is not
// among them.
func scoreOf(tb testing.TB, hits []Hit, doc uint64) float64 {
	tb.Helper()
	for _, h := range hits {
		if h.Doc == doc {
			return h.Score
		}
	}
	tb.Fatalf("doc %d not in %v", doc, hits)
	return 0
}

func docs(hits []Hit) []uint64 {
	out := make([]uint64, len(hits))
	for i, h := range hits {
		out[i] = h.Doc
	}
	return out
}

// filler pads the corpus so idf is meaningful.
func filler() [][2]string {
	var out [][2]string
	for i := range 20 {
		out = append(out, [2]string{fmt.Sprintf("unrelated topic number %d about gardening", i), "water the plants every morning"})
	}
	return out
}

func TestSearchQuestionFieldBoosted(t *testing.T) {
	qas := append([][2]string{
		{"how to restart the daemon", "nginx reload picks up new config"}, // 1: term in answer
		{"nginx reload picks up new config", "how to restart the daemon"}, // 2: term in question
	}, filler()...)
	idx := newIndex(t, qas...)
	hits := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, "nginx reload", 10)
	if got := docs(hits); len(got) < 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("ranking = %v, want question match 2 before answer match 1", got)
	}
}

func TestSearchExactBeatsPartial(t *testing.T) {
	qas := append([][2]string{
		{"docker container exits immediately", "check the logs"},
		{"docker container exits immediately after start with code 137", "out of memory killer"},
		{"docker image build", "use a cache"},
	}, filler()...)
	idx := newIndex(t, qas...)
	hits := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, "docker container exits with code 137", 10)
	if len(hits) == 0 || hits[0].Doc != 2 {
		t.Fatalf("top = %v, want doc 2 (all terms)", docs(hits))
	}
	if i := slices.Index(docs(hits), 3); i >= 0 && i < slices.Index(docs(hits), 1) {
		t.Errorf("partial match 3 ranked above better match 1: %v", docs(hits))
	}
}

func TestSearchRelevanceRange(t *testing.T) {
	qas := append([][2]string{
		{"ENOENT when opening config.yaml", "the file config.yaml does not exist"},
		{"config", "config config config config config config config"},
	}, filler()...)
	idx := newIndex(t, qas...)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, q := range []string{"ENOENT config.yaml", "config", "gardening", "config zzzunknown", "number 3 about"} {
		for _, h := range search(t, s, idx, q, 0) {
			if h.Relevance < 0 || h.Relevance > 1 || h.Score <= 0 {
				t.Errorf("%q: hit %+v out of range", q, h)
			}
		}
	}
	// An unknown query term lowers relevance.
	full := search(t, s, idx, "ENOENT config.yaml", 1)
	part := search(t, s, idx, "ENOENT config.yaml zzzunknown", 1)
	if full[0].Doc != part[0].Doc || !(part[0].Relevance < full[0].Relevance) {
		t.Errorf("relevance with unknown term %v, want below %v", part, full)
	}
	if full[0].Relevance < 0.2 {
		t.Errorf("exact match relevance %.3f below the default min_score 0.2", full[0].Relevance)
	}
}

func TestSearchNoHits(t *testing.T) {
	idx := newIndex(t, filler()...)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, q := range []string{"", "   ", "the and of to", "zzzunknown"} {
		if hits := search(t, s, idx, q, 10); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want none", q, hits)
		}
	}
	if hits := search(t, s, NewMemIndex(NewAnalyzer()), "gardening", 10); len(hits) != 0 {
		t.Errorf("empty index returned %v", hits)
	}
}

func TestSearchTiesByLowerDoc(t *testing.T) {
	idx := NewMemIndex(NewAnalyzer())
	for _, d := range []uint64{42, 7, 19, 3} {
		idx.Add(d, "same question text", "same answer")
	}
	idx.Add(100, "other", "words")
	hits := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, "question", 3)
	if got := docs(hits); !slices.Equal(got, []uint64{3, 7, 19}) {
		t.Errorf("tie order = %v, want [3 7 19]", got)
	}
}

// A term repeated in the query weighs (K3+1)·n/(K3+n) times its weight
// once: more, but less than n times (with K3 = 2, a term said three times
// weighs 1.8 times); K3 = 0 counts repeats once.
func TestSearchRepeatedQueryTermWeighsMore(t *testing.T) {
	// "kernel" (doc 1) is rarer than "boot" (docs 2 and 3), so the kernel
	// document ranks first unless "boot" is said more often.
	idx := newIndex(t, append([][2]string{{"kernel panic", "update grub"}, {"boot order", "bios"}, {"boot menu", "grub"}}, filler()...)...)
	p := DefaultParams()
	p.K3 = 2
	s := NewScorer(NewAnalyzer(), p)
	once := search(t, s, idx, "kernel boot", 0)
	if got := docs(once); got[0] != 1 {
		t.Fatalf("kernel boot ranks %v, want the kernel document (1) first", got)
	}
	twice := search(t, s, idx, "kernel boot boot", 0)
	if got := docs(twice); got[0] != 2 && got[0] != 3 {
		t.Errorf("kernel boot boot ranks %v, want a boot document first", got)
	}
	thrice := search(t, s, idx, "kernel kernel kernel boot", 0)
	score := func(hits []Hit, doc uint64) float64 { return scoreOf(t, hits, doc) }
	if r := score(thrice, 1) / score(once, 1); math.Abs(r-1.8) > 1e-9 {
		t.Errorf("kernel said three times: score ×%v, want ×1.8", r)
	}
	if a, b := score(once, 2), score(thrice, 2); a != b {
		t.Errorf("boot document: %v with kernel once, %v with it three times", a, b)
	}

	p.K3 = 0
	s = NewScorer(NewAnalyzer(), p)
	if a, b := search(t, s, idx, "kernel boot", 0), search(t, s, idx, "kernel kernel kernel boot", 0); !slices.Equal(a, b) {
		t.Errorf("K3 = 0: a repeated term changed the results:\n%v\n%v", a, b)
	}
}

func TestSearchContextCancelled(t *testing.T) {
	idx := newIndex(t, filler()...)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Search(ctx, idx, "gardening", 10); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// cancelSource cancels its context while a posting list is being read.
type cancelSource struct {
	*MemIndex
	cancel context.CancelFunc
}

func (c cancelSource) Postings(ctx context.Context, term string, fn func(Posting) bool) error {
	for i := range 3 * ctxCheckEvery {
		if i == 10 {
			c.cancel()
		}
		if !fn(Posting{Doc: uint64(i), TF: TF{1, 0}, Len: [NumFields]uint32{3, 3}}) {
			return nil
		}
	}
	return nil
}

func TestSearchContextCancelledDuringPostings(t *testing.T) {
	idx := newIndex(t, filler()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewScorer(NewAnalyzer(), DefaultParams())
	if _, err := s.Search(ctx, cancelSource{idx, cancel}, "gardening", 10); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// countingSource records which terms' postings were read.
type countingSource struct {
	*MemIndex
	read []string
}

func (c *countingSource) Postings(ctx context.Context, term string, fn func(Posting) bool) error {
	c.read = append(c.read, term)
	return c.MemIndex.Postings(ctx, term, fn)
}

func TestSearchReadsOnlyQueryTermPostings(t *testing.T) {
	src := &countingSource{MemIndex: newIndex(t, filler()...)}
	search(t, NewScorer(NewAnalyzer(), DefaultParams()), src, "water gardening zzzunknown", 10)
	slices.Sort(src.read)
	if want := []string{"garden", "water"}; !slices.Equal(src.read, want) {
		t.Errorf("postings read for %v, want %v", src.read, want)
	}
}

// postingsOnly hides MemIndex's TermFreqReader capability.
type postingsOnly struct{ m *MemIndex }

func (p postingsOnly) Stats(ctx context.Context) (Stats, error) { return p.m.Stats(ctx) }
func (p postingsOnly) DocFreq(ctx context.Context, t string) (int64, error) {
	return p.m.DocFreq(ctx, t)
}
func (p postingsOnly) Postings(ctx context.Context, t string, fn func(Posting) bool) error {
	return p.m.Postings(ctx, t, fn)
}

// randomCorpus builds n QAs over a small skewed vocabulary.
func randomCorpus(tb testing.TB, n int, seed uint64) (*MemIndex, []string) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega 内存 泄漏 超时 错误 parseConfig src/a/b.go ENOENT 404")
	z := rand.NewZipf(r, 1.2, 1, uint64(len(vocab)-1))
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[z.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	return indexRandom(r, text, n, [2]int{3, 6}, 30, 50, [2]int{2, 8})
}

// indexRandom indexes n QAs drawn by text (questions of q[0]+rand(q[1])
// tokens, answers of rand(a)) and returns nq queries of qq[0]+rand(qq[1]).
func indexRandom(r *rand.Rand, text func(int) string, n int, q [2]int, a, nq int, qq [2]int) (*MemIndex, []string) {
	idx := NewMemIndex(NewAnalyzer())
	for i := range n {
		idx.Add(uint64(i), text(q[0]+r.IntN(q[1])), text(r.IntN(a)))
	}
	queries := make([]string, nq)
	for i := range queries {
		queries[i] = text(qq[0] + r.IntN(qq[1]))
	}
	return idx, queries
}

func TestSearchTopKMatchesFullRanking(t *testing.T) {
	idx, queries := randomCorpus(t, 500, 1)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, q := range queries {
		all := search(t, s, idx, q, 0)
		for _, k := range []int{1, 5, 10} {
			top := search(t, s, idx, q, k)
			if want := all[:min(k, len(all))]; !slices.Equal(top, want) {
				t.Fatalf("%q k=%d: %v, want %v", q, k, top, want)
			}
		}
	}
}

func TestSearchBudgetSameWithAndWithoutTermFreqReader(t *testing.T) {
	idx, queries := randomCorpus(t, 500, 2)
	p := DefaultParams()
	p.PostingBudget, p.RescoreDepth = 100, 20
	s := NewScorer(NewAnalyzer(), p)
	deferred := 0
	for _, q := range queries {
		a := search(t, s, idx, q, 10)
		b := search(t, s, postingsOnly{idx}, q, 10)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: with TermFreqReader %v, postings only %v", q, a, b)
		}
		if exact := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, q, 10); !slices.Equal(a, exact) {
			deferred++
		}
	}
	if deferred == 0 {
		t.Error("budget never changed a ranking; the deferred path is not exercised")
	}
}

func TestSearchBudgetBoundsPostingsRead(t *testing.T) {
	idx, queries := randomCorpus(t, 500, 3)
	p := DefaultParams()
	p.PostingBudget, p.RescoreDepth = 50, 10
	s := NewScorer(NewAnalyzer(), p)
	for _, q := range queries {
		n := 0
		src := &postingCounter{MemIndex: idx, n: &n}
		search(t, s, src, q, 10)
		// The rarest term is always read; the rest only within budget.
		terms := NewAnalyzer().Terms(q)
		var minDF int64 = -1
		for _, term := range terms {
			if df, _ := idx.DocFreq(context.Background(), term); df > 0 && (minDF < 0 || df < minDF) {
				minDF = df
			}
		}
		if limit := max(minDF, p.PostingBudget); int64(n) > limit {
			t.Errorf("%q read %d postings, want ≤ %d", q, n, limit)
		}
	}
}

// postingCounter counts postings read through Postings (TermFreqs is not
// counted: it reads no posting lists).
type postingCounter struct {
	*MemIndex
	n *int
}

func (c *postingCounter) Postings(ctx context.Context, term string, fn func(Posting) bool) error {
	return c.MemIndex.Postings(ctx, term, func(p Posting) bool { *c.n++; return fn(p) })
}

func TestAccumGrows(t *testing.T) {
	a := NewScorer(NewAnalyzer(), DefaultParams()).getAccum(1, false)
	for i := range uint64(1000) {
		a.add(i*7919, 1, 0)
		a.add(i*7919, 1, 0)
	}
	hits := a.top(0, calib{norm: 2, exp: 1}, 0)
	if len(hits) != 1000 {
		t.Fatalf("got %d docs, want 1000", len(hits))
	}
	for _, h := range hits {
		if h.Score != 2 || h.Relevance != 1 {
			t.Fatalf("hit %+v, want score 2 relevance 1", h)
		}
	}
}

// TestAccumBestIsTopK holds best (the sampled threshold, and the full
// pass it falls back to) against a full sort, on tables with many ties,
// skewed scores and floors that leave fewer than k documents.
func TestAccumBestIsTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sc := NewScorer(NewAnalyzer(), DefaultParams())
	for round := range 300 {
		n := 1 + rng.IntN(3000)
		a := sc.getAccum(n, false)
		levels := 1 + rng.IntN(50) // few distinct scores: ties at the k-th
		for range n {
			v := float64(1+rng.IntN(levels)) / float64(levels)
			if round%3 == 0 {
				v = v * v * v // most documents low, a few high
			}
			a.add(rng.Uint64N(1<<40), v, 0)
		}
		all := a.best(0, 0)
		sortHits(all)
		for _, k := range []int{1, 16, 50, 100, 400} {
			floor := 0.0
			if round%4 == 1 {
				floor = all[len(all)/2].Score // at most half reach it
			}
			want := above(slices.Clone(all), 0)
			j := 0
			for _, h := range want {
				if h.Score >= floor {
					want[j] = h
					j++
				}
			}
			want = want[:min(j, k)]
			got := a.best(k, floor)
			sortHits(got)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, %d docs, k %d, floor %v: best differs from the full sort (%d vs %d hits)", round, len(all), k, floor, len(got), len(want))
			}
			scored := make([]accSlot, 0, len(all))
			for _, h := range all {
				if h.Score >= floor {
					scored = append(scored, accSlot{doc: h.Doc, score: h.Score})
				}
			}
			rng.Shuffle(len(scored), func(i, j int) { scored[i], scored[j] = scored[j], scored[i] })
			got = bestSlots(scored, k, floor)
			sortHits(got)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, %d docs, k %d, floor %v: bestSlots differs from the full sort (%d vs %d hits)", round, len(all), k, floor, len(got), len(want))
			}
		}
		sc.putAccum(a)
	}
}

// TestSelectionHelpers checks sortHits, bestSorted, sortByDoc and sortRarestFirst
// against plain sorts, with ties, on both sides of their size limits.
func TestSelectionHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 400 {
		n := rng.IntN(600)
		hits := make([]Hit, n)
		docs := rng.Perm(4 * n)
		for i := range hits {
			doc := uint64(docs[i])
			if round%5 == 0 {
				doc |= 1 << 60 // too large for sortByDocKeys
			}
			hits[i] = Hit{Doc: doc, Score: float64(rng.IntN(20))}
		}
		k := rng.IntN(120)
		want := slices.Clone(hits)
		slices.SortFunc(want, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Doc, b.Doc)) })
		few := slices.Clone(want[:min(len(want), rng.IntN(40))])
		rng.Shuffle(len(few), func(i, j int) { few[i], few[j] = few[j], few[i] })
		sortHits(few)
		if !slices.Equal(few, want[:len(few)]) {
			t.Fatalf("round %d: sortHits(%d hits) = %v", round, len(few), few)
		}
		if k > 0 {
			want = want[:min(k, len(want))]
		}
		if got := bestSorted(slices.Clone(hits), k); !slices.Equal(got, want) {
			t.Fatalf("round %d: bestSorted(%d hits, k %d) = %v, want %v", round, n, k, got, want)
		}
		byDoc := slices.Clone(hits)
		slices.SortFunc(byDoc, func(a, b Hit) int { return cmp.Compare(a.Doc, b.Doc) })
		got := slices.Clone(hits)
		sortByDoc(got, nil)
		if !slices.Equal(got, byDoc) {
			t.Fatalf("round %d: sortByDoc(%d hits) differs from a sort by Doc", round, n)
		}

		qts := make([]queryTerm, rng.IntN(100))
		for i := range qts {
			qts[i] = queryTerm{term: fmt.Sprint("t", rng.IntN(1000)), df: int64(rng.IntN(5))}
		}
		wantQ := slices.Clone(qts)
		slices.SortStableFunc(wantQ, func(a, b queryTerm) int { return cmp.Or(cmp.Compare(a.df, b.df), cmp.Compare(a.term, b.term)) })
		sortRarestFirst(qts)
		for i := range qts {
			if qts[i].df != wantQ[i].df || qts[i].term != wantQ[i].term {
				t.Fatalf("round %d: sortRarestFirst(%d terms) = %v, want %v", round, len(qts), qts, wantQ)
			}
		}
	}
}

func TestCJKCoordinationRewardsCoverage(t *testing.T) {
	qas := append(filler(),
		[2]string{"内存泄漏排查", "pprof"},          // 1+len(filler): covers the whole query
		[2]string{"内存", "goroutine 内存 内存 内存"}, // covers a part, strongly
	)
	idx := newIndex(t, qas...)
	full, part := uint64(len(qas)-1), uint64(len(qas))
	on := NewScorer(NewAnalyzer(), DefaultParams())
	p := DefaultParams()
	p.CJKCoord = 0
	off := NewScorer(NewAnalyzer(), p)
	score := func(hits []Hit, doc uint64) float64 { return scoreOf(t, hits, doc) }
	const q = "内存泄漏排查"
	a, b := search(t, on, idx, q, 0), search(t, off, idx, q, 0)
	if score(a, full) != score(b, full) {
		t.Errorf("a document covering the whole query: score %v with coordination, %v without; want equal", score(a, full), score(b, full))
	}
	if !(score(a, part) < score(b, part)) {
		t.Errorf("a document covering part of the query: score %v with coordination, not below %v without", score(a, part), score(b, part))
	}
	// English-only queries are unaffected.
	for _, q := range []string{"memory leak", "goroutine pprof"} {
		if a, b := search(t, on, idx, q, 0), search(t, off, idx, q, 0); !slices.Equal(a, b) {
			t.Errorf("%q: coordination changed an English query: %v vs %v", q, a, b)
		}
	}
}

func TestCJKBigramWeight(t *testing.T) {
	p := DefaultParams()
	uni, cjk1 := p.termIDF("内", 100, 10)
	bi, cjk2 := p.termIDF("内存", 100, 10)
	en, cjk3 := p.termIDF("memory", 100, 10)
	if !cjk1 || !cjk2 || cjk3 {
		t.Fatalf("CJK flags: %v %v %v", cjk1, cjk2, cjk3)
	}
	if bi != uni*p.CJKBigramWeight || uni != en*p.CJKWeight {
		t.Errorf("idf at equal df: unigram %v, bigram %v (weight %v), English %v (CJK weight %v)", uni, bi, p.CJKBigramWeight, en, p.CJKWeight)
	}
}

func TestSearchMemIndexFastPathSameAsPostings(t *testing.T) {
	idx, queries := randomCorpus(t, 500, 3)
	p := DefaultParams()
	p.PostingBudget = 0
	s := NewScorer(NewAnalyzer(), p)
	for _, q := range queries {
		if a, b := search(t, s, idx, q, 0), search(t, s, postingsOnly{idx}, q, 0); !slices.Equal(a, b) {
			t.Fatalf("%q: MemIndex %v, through Postings %v", q, a, b)
		}
	}
}

// TestSearchRangesSameAsTable compares the range-by-range scoring of a
// MemIndex's sorted lists (scoreSorted) with the hash table that every
// other Source fills, bit for bit: documents with ids spread over many
// ranges, small and huge, added out of order, replaced and removed; top
// k and all, with and without a floor, with terms deferred and without.
func TestSearchRangesSameAsTable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[z.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	idx := NewMemIndex(NewAnalyzer())
	var ids []uint64
	for i := range 3000 {
		var doc uint64
		switch i % 4 {
		case 0:
			doc = r.Uint64N(20000) // several ranges of 4,096
		case 1:
			doc = 1<<40 + r.Uint64N(1<<20)
		case 2:
			doc = 1<<64 - 1 - r.Uint64N(10000) // the last range
		default:
			doc = r.Uint64()
		}
		ids = append(ids, doc)
		idx.Add(doc, text(2+r.IntN(6)), text(r.IntN(20)))
	}
	for range 300 { // replaced (moved within their lists) and removed
		doc := ids[r.IntN(len(ids))]
		if r.IntN(2) == 0 {
			idx.Add(doc, text(3), text(5))
		} else {
			idx.Remove(doc)
		}
	}
	budget := DefaultParams()
	budget.PostingBudget, budget.RescoreDepth = 300, 20
	for _, p := range []Params{DefaultParams(), budget} {
		s := NewScorer(NewAnalyzer(), p)
		for range 60 {
			q := text(2 + r.IntN(6))
			for _, k := range []int{0, 1, 10} {
				for _, minRel := range []float64{0, 0.2} {
					a, err := s.SearchMin(context.Background(), idx, q, k, minRel)
					if err != nil {
						t.Fatal(err)
					}
					b, err := s.SearchMin(context.Background(), postingsOnly{idx}, q, k, minRel)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(a, b) {
						i := 0
						for i < min(len(a), len(b)) && a[i] == b[i] {
							i++
						}
						t.Fatalf("%q k %d min %v budget %d: ranges %d hits, table %d, first difference at %d: %v vs %v", q, k, minRel, p.PostingBudget, len(a), len(b), i, a[i:min(i+2, len(a))], b[i:min(i+2, len(b))])
					}
				}
			}
		}
	}
}

func TestSearchTopKMatchesFullRankingCJK(t *testing.T) {
	// Many documents share characters with every query, so the exact path
	// coordinates only the scores that can reach the top k.
	idx, queries := randomCJKCorpus(t, 400, 4)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, q := range queries {
		all := search(t, s, idx, q, 0)
		if len(all) < 100 {
			t.Fatalf("%q matches %d documents; the test wants many", q, len(all))
		}
		for _, k := range []int{1, 5, 10} {
			if top, want := search(t, s, idx, q, k), all[:k]; !slices.Equal(top, want) {
				t.Fatalf("%q k=%d: %v, want %v", q, k, top, want)
			}
		}
	}
}

func TestCJKCalibrationKeepsRanking(t *testing.T) {
	qas := append(filler(),
		[2]string{"如何解决 Go 程序中的内存泄漏？", "使用 pprof 查看堆内存分配"},
		[2]string{"Go 服务内存一直上涨", "检查 goroutine 泄漏"},
		[2]string{"内存不足", "增加交换分区"},
		[2]string{"memory leak in a Go service", "use pprof"},
	)
	idx := newIndex(t, qas...)
	on := NewScorer(NewAnalyzer(), DefaultParams())
	p := DefaultParams()
	p.CJKCalibration = 0
	off := NewScorer(NewAnalyzer(), p)
	for _, q := range []string{"Go 程序内存泄漏怎么排查", "内存泄漏", "内存 pprof goroutine leak", "memory leak pprof"} {
		a, b := search(t, on, idx, q, 0), search(t, off, idx, q, 0)
		if len(a) == 0 || !slices.Equal(docs(a), docs(b)) {
			t.Fatalf("%q: ranking %v with calibration, %v without", q, docs(a), docs(b))
		}
		english := !strings.ContainsFunc(q, isCJK)
		for i := range a {
			if a[i].Score != b[i].Score {
				t.Errorf("%q: calibration changed a score: %v vs %v", q, a[i], b[i])
			}
			if english && a[i].Relevance != b[i].Relevance {
				t.Errorf("%q: calibration changed an English query's relevance: %v vs %v", q, a[i], b[i])
			}
			if !english && !(a[i].Relevance > b[i].Relevance && a[i].Relevance < 1) {
				t.Errorf("%q: relevance %v with calibration, want in (%v, 1)", q, a[i].Relevance, b[i].Relevance)
			}
			if i > 0 && a[i].Relevance > a[i-1].Relevance {
				t.Errorf("%q: relevance not decreasing along the ranking: %v", q, a)
			}
		}
	}
}

func TestCJKUnseenQueryIsWeak(t *testing.T) {
	// A Chinese query about something the memory has never seen, sharing a
	// few common characters with it, is not a strong match: the calibration
	// lifts paraphrases above min_score, not scraps.
	qas := append(filler(),
		[2]string{"如何解决 Go 程序中的内存泄漏？", "使用 pprof 查看堆内存分配"},
		[2]string{"Docker 容器启动后立即退出怎么办？", "先看 docker logs 的输出"},
		[2]string{"如何在 Linux 上查看哪个进程占用了端口？", "使用 lsof 查看"},
	)
	idx := newIndex(t, qas...)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, q := range []string{"如何做红烧肉", "孩子晚上总是咳嗽怎么办", "程序员如何提高英语口语水平"} {
		for _, h := range search(t, s, idx, q, 0) {
			if h.Relevance >= 0.2 {
				t.Errorf("%q: hit %+v passes min_score 0.2", q, h)
			}
		}
	}
	// A full match stays well above it, and below 1.
	h := search(t, s, idx, "Docker 容器启动后立即退出怎么办？", 1)
	if len(h) == 0 || h[0].Relevance < 0.5 || h[0].Relevance >= 1 {
		t.Errorf("full match: %v, want relevance in [0.5, 1)", h)
	}
}

// filterRel is Search's hits with Relevance ≥ min, at most k.
func filterRel(hits []Hit, min float64, k int) []Hit {
	var out []Hit
	for _, h := range hits {
		if h.Relevance >= min {
			out = append(out, h)
		}
	}
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

func TestSearchMinSameAsFilteredSearch(t *testing.T) {
	en, enQueries := randomCorpus(t, 600, 5)
	zh, zhQueries := randomCJKCorpus(t, 400, 6)
	// Exact: no budget, and every candidate that can pass is followed.
	exact := DefaultParams()
	exact.PostingBudget, exact.RescoreDepth = 0, 1<<20
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		idx     *MemIndex
		queries []string
	}{{"english", en, enQueries}, {"cjk", zh, zhQueries}} {
		{
			s := NewScorer(NewAnalyzer(), exact)
			pruned := 0
			for _, q := range c.queries {
				all := search(t, s, c.idx, q, 0)
				for _, minRel := range []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.9} {
					for _, k := range []int{0, 1, 5, 10} {
						want := filterRel(all, minRel, k)
						for _, src := range []Source{c.idx, postingsOnly{c.idx}} {
							got, err := s.SearchMin(ctx, src, q, k, minRel)
							if err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(got, want) {
								t.Fatalf("%s %q min %.2f k=%d (%T): %v, want %v", c.name, q, minRel, k, src, got, want)
							}
						}
						n := 0
						_, _ = s.SearchMin(ctx, &postingCounter{MemIndex: c.idx, n: &n}, q, k, minRel)
						m := 0
						_, _ = s.Search(ctx, &postingCounter{MemIndex: c.idx, n: &m}, q, k)
						if n > m {
							t.Fatalf("%s %q min %.2f: read %d postings, Search reads %d", c.name, q, minRel, n, m)
						}
						if n < m {
							pruned++
						}
					}
				}
			}
			if pruned == 0 {
				t.Errorf("%s: the floor never saved a posting; the pruning is not exercised", c.name)
			}
		}
	}
}

func TestSearchMinNoFloor(t *testing.T) {
	idx, queries := randomCorpus(t, 300, 9)
	p := DefaultParams()
	p.PostingBudget, p.RescoreDepth = 50, 10 // the deferred path too
	s := NewScorer(NewAnalyzer(), p)
	for _, q := range queries {
		want := search(t, s, idx, q, 10)
		for _, floor := range []float64{0, -1, math.NaN()} {
			got, err := s.SearchMin(context.Background(), idx, q, 10, floor)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%q min %v: %v (err %v), want Search's %v", q, floor, got, err, want)
			}
		}
	}
}

func TestSearchMinOutOfReach(t *testing.T) {
	idx := newIndex(t, filler()...)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	// "water" matches, the other words match nothing: together they hold
	// most of the query's weight, so no document can reach 0.5.
	n := 0
	hits, err := s.SearchMin(context.Background(), &postingCounter{MemIndex: idx, n: &n}, "water zzzunknown qqqnothing", 10, 0.5)
	if err != nil || len(hits) != 0 || n != 0 {
		t.Errorf("hits %v, err %v, %d postings read; want none, nothing read", hits, err, n)
	}
	if hits := search(t, s, idx, "water zzzunknown qqqnothing", 10); len(hits) == 0 {
		t.Error("without a floor the query matches nothing; the test is vacuous")
	}
}

// randomCJKCorpus builds n Chinese QAs over a small alphabet, so every
// query matches many documents.
func randomCJKCorpus(tb testing.TB, n int, seed uint64) (*MemIndex, []string) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	chars := []rune("内存泄漏排查端口占用权限不足容器启动失败数据库连接超时缓存日志磁盘")
	text := func(n int) string {
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = chars[r.IntN(len(chars))]
		}
		return string(rs)
	}
	return indexRandom(r, text, n, [2]int{4, 8}, 20, 30, [2]int{4, 10})
}

// perTermIndex is a MemIndex asked for one deferred term at a time.
type perTermIndex struct{ *MemIndex }

func (perTermIndex) TermFreqsPerTerm() bool { return true }

func TestSearchMinSameOnEveryRescorePath(t *testing.T) {
	en, enQueries := randomCorpus(t, 600, 7)
	zh, zhQueries := randomCJKCorpus(t, 400, 8)
	p := DefaultParams()
	p.RescoreDepth = 10 // the cap binds
	s := NewScorer(NewAnalyzer(), p)
	ctx := context.Background()
	for _, c := range []struct {
		idx     *MemIndex
		queries []string
	}{{en, enQueries}, {zh, zhQueries}} {
		for _, q := range c.queries {
			for _, minRel := range []float64{0.1, 0.2, 0.4} {
				want, err := s.SearchMin(ctx, c.idx, q, 5, minRel)
				if err != nil {
					t.Fatal(err)
				}
				for _, src := range []Source{perTermIndex{c.idx}, postingsOnly{c.idx}} {
					got, err := s.SearchMin(ctx, src, q, 5, minRel)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%q min %.1f: %T %v, MemIndex %v", q, minRel, src, got, want)
					}
				}
			}
		}
	}
}

func TestCompoundWeight(t *testing.T) {
	p := DefaultParams()
	word, _ := p.termIDF("module", 100, 10)
	for _, c := range []string{"import_module", "pkg.func", "usr/lib/x.so", "top-up", "c:\\temp"} {
		if w, cjk := p.termIDF(c, 100, 10); w != word*p.CompoundWeight || cjk {
			t.Errorf("%q: idf %v (CJK %v), want %v·%v", c, w, cjk, word, p.CompoundWeight)
		}
	}
	for _, c := range []string{"parsehttpheader", "e0308", "0x1f", "oclock"} {
		if w, _ := p.termIDF(c, 100, 10); w != word {
			t.Errorf("%q: idf %v, want the full %v", c, w, word)
		}
	}
}

// A document sharing two of a query's words outranks one sharing only a
// compound (whole and parts) of it: the whole repeats its parts' evidence.
func TestCompoundWholeDoesNotOutweighWords(t *testing.T) {
	qas := append(filler(),
		[2]string{"exceptions from import_module in the web server", "stack trace"},
		[2]string{"horizon dashboard shows apache exceptions", "stack trace"},
	)
	for i := range 6 {
		qas = append(qas, [2]string{fmt.Sprintf("python import of module number %d", i), "sys.path"})
		qas = append(qas, [2]string{fmt.Sprintf("apache virtual host number %d", i), "config"})
	}
	idx := newIndex(t, qas...)
	hits := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, "Horizon: Apache exceptions at import_module", 2)
	if len(hits) == 0 || hits[0].Doc != 22 {
		t.Errorf("hits %v: want doc 22 (horizon, apache, exceptions) first", docs(hits))
	}
}

// The digit groups of a query's compound weigh as its whole does
// (CompoundWeight): "12.10" is one version, and its 12 on its own is any
// number. The parts that are words keep their full weight.
func TestCompoundDigitGroupsWeighAsTheWhole(t *testing.T) {
	// Docs 1 and 2 are alike but for the query term each holds, both as
	// rare (filler() has the numbers below 20); the tie would go to doc 1.
	idx := newIndex(t, append([][2]string{{"31 cable", ""}, {"jack cable", ""}, {"import failed", ""}}, filler()...)...)
	p := DefaultParams()
	s := NewScorer(NewAnalyzer(), p)
	if got := docs(search(t, s, idx, "jack 31.42", 2)); !slices.Equal(got, []uint64{2, 1}) {
		t.Errorf("jack 31.42 ranks %v, want the jack document (2) before the one with 31 (1)", got)
	}
	score := func(q string, doc uint64) float64 {
		for _, h := range search(t, s, idx, q, 0) {
			if h.Doc == doc {
				return h.Score
			}
		}
		t.Fatalf("%q: doc %d not found", q, doc)
		return 0
	}
	if r := score("jack 31.42", 1) / score("jack 31", 1); math.Abs(r-p.CompoundWeight) > 1e-9 {
		t.Errorf("31 as a group of 31.42 weighs %v of 31 as a word, want %v", r, p.CompoundWeight)
	}
	if a, b := score("import_module", 3), score("import", 3); a != b {
		t.Errorf("import as a part of import_module scores %v, as a word %v: a word part keeps its weight", a, b)
	}
}

// In a query mixing English and Chinese, an English word weighs as much as
// a two-character Chinese word, not as one character: of two documents as
// long and as rare, the one naming the query's goroutine outranks the one
// sharing its 好像 ("seems"), which matches three terms (好, 像, 好像).
func TestCJKWeightMixedQuery(t *testing.T) {
	idx := newIndex(t, append(filler(),
		[2]string{"好像", "不确定"},
		[2]string{"goroutine stack trace", "pprof"},
	)...)
	hits := search(t, NewScorer(NewAnalyzer(), DefaultParams()), idx, "goroutine 好像泄露了", 2)
	if !slices.Equal(docs(hits), []uint64{22, 21}) {
		t.Errorf("hits %v: want the goroutine document (22) before the 好像 one (21)", docs(hits))
	}
}

// A query in one script ranks and scores the same whatever CJKWeight:
// its weights all scale together, and its CJK share stays 0 or 1.
func TestCJKWeightOneScriptUnchanged(t *testing.T) {
	idx := newIndex(t, append(filler(),
		[2]string{"如何解决 Go 程序中的内存泄漏？", "使用 pprof 查看堆内存分配"},
		[2]string{"Docker 容器启动后立即退出怎么办？", "先看 docker logs 的输出"},
		[2]string{"内存不足导致进程被杀", "查看 dmesg 中的 OOM 记录"},
		[2]string{"memory leak in a Go program", "look at the heap profile"},
	)...)
	p1 := DefaultParams()
	p1.CJKWeight = 1
	a := NewAnalyzer()
	for _, q := range []string{"内存泄漏怎么排查", "容器退出", "memory leak heap"} {
		want := search(t, NewScorer(a, p1), idx, q, 0)
		got := search(t, NewScorer(a, DefaultParams()), idx, q, 0)
		if len(got) == 0 || !slices.Equal(docs(got), docs(want)) {
			t.Fatalf("%q: hits %v, with CJKWeight 1 %v", q, docs(got), docs(want))
		}
		for i := range got {
			if math.Abs(got[i].Relevance-want[i].Relevance) > 1e-12 {
				t.Errorf("%q: doc %d relevance %v, with CJKWeight 1 %v", q, got[i].Doc, got[i].Relevance, want[i].Relevance)
			}
		}
	}
	p := DefaultParams()
	if s := p.cjkShare(3, 3); s != 1 {
		t.Errorf("share of an all-CJK query: %v", s)
	}
	if s := p.cjkShare(2, 1); math.Abs(s-0.75) > 1e-12 {
		t.Errorf("share of a query with 1 of its 2 weight in CJK terms at CJKWeight 1/3: %v, want 3/(3+1)", s)
	}
}

// TestCountTerms checks countTerms, on both sides of its table's size,
// against a count with a map: distinct terms in first-occurrence order,
// each with its count.
func TestCountTerms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 300 {
		ts := make([]string, rng.IntN(300))
		vocab := 1 + rng.IntN(200)
		for i := range ts {
			ts[i] = fmt.Sprint("w", rng.IntN(vocab))
		}
		var want []queryTerm
		at := map[string]int{}
		for _, term := range ts {
			if i, ok := at[term]; ok {
				want[i].n++
				continue
			}
			at[term] = len(want)
			want = append(want, queryTerm{term: term, n: 1})
		}
		prefix := []queryTerm{{term: "kept", n: 3}}
		got := countTerms(slices.Clone(prefix), ts)
		if !slices.Equal(got, append(prefix, want...)) {
			t.Fatalf("round %d (%d terms): countTerms = %v, want %v", round, len(ts), got, want)
		}
	}
}

// TestStatsTablesAndCoordMemo checks the kept computations against the
// functions they keep: the raised idf of every document frequency, in the
// table and beyond it, read twice (computed, then kept), for statistics
// that change; coordination factors of repeated and colliding coverages.
func TestStatsTablesAndCoordMemo(t *testing.T) {
	s := NewScorer(NewAnalyzer(), DefaultParams())
	for _, docs := range []int64{1, 7, 300, idfLens - 1, idfLens, 5000} {
		tabs := s.tables(Stats{Docs: docs, TotalLen: [NumFields]int64{10 * docs, 40 * docs}})
		if s.tables(tabs.st) != tabs {
			t.Fatalf("docs %d: the tables of the same statistics were made again", docs)
		}
		for range 2 {
			for df := range docs + 1 {
				want := s.p.raisedIDF(float64(docs), float64(df))
				if got := tabs.raisedIDF(&s.p, df); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("docs %d df %d: raised idf %v, want %v", docs, df, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 50 {
		norm, e := 1+10*rng.Float64(), rng.Float64()
		memo := newCoordMemo(norm, e)
		covs := make([]float64, 200) // more than the memo's slots: collisions
		for i := range covs {
			covs[i] = norm * rng.Float64() / 2
		}
		for range 5 {
			for _, c := range covs {
				want := coordFactor(c, norm, e)
				if got := memo.factor(c); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("coverage %v of %v: factor %v, want %v", c, norm, got, want)
				}
			}
		}
	}
}
