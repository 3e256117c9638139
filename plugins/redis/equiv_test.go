package redisstore

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/retrieval"
)

// packedSource is the reference reader of a project's index: it reads the
// packed lists and lens buckets straight from Redis on every call and
// decodes them with the codec's own forPostings, with no decoded lists, no
// index cache and no TermFreqReader.
type packedSource struct {
	s      *Store
	owners []string // scope index → owner (own scope only)
}

func (p packedSource) list(ctx context.Context, owner, term string) (string, error) {
	v, err := p.s.rdb.Get(ctx, p.s.k.post(owner, ownScope, term)).Result()
	if errors.Is(err, redis.Nil) {
		parts, err := p.s.rdb.HMGet(ctx, p.s.k.postBucket(owner, ownScope, term), shortFields(term)...).Result()
		return shortList(parts), err
	}
	return v, err
}

func (p packedSource) Stats(ctx context.Context) (retrieval.Stats, error) {
	var st retrieval.Stats
	for _, o := range p.owners {
		vals, err := p.s.rdb.HMGet(ctx, p.s.k.stats(o), "n:"+ownScope, "q:"+ownScope, "a:"+ownScope).Result()
		if err != nil {
			return st, err
		}
		var nums [3]int64
		for i, v := range vals {
			if str, ok := v.(string); ok {
				nums[i], _ = strconv.ParseInt(str, 10, 64)
			}
		}
		st.Docs += nums[0]
		st.TotalLen[0] += nums[1]
		st.TotalLen[1] += nums[2]
	}
	return st, nil
}

func (p packedSource) DocFreq(ctx context.Context, term string) (int64, error) {
	var n int64
	for _, o := range p.owners {
		l, err := p.list(ctx, o, term)
		if err != nil {
			return 0, err
		}
		n += countPostings(l)
	}
	return n, nil
}

func (p packedSource) Postings(ctx context.Context, term string, fn func(retrieval.Posting) bool) error {
	for i, o := range p.owners {
		l, err := p.list(ctx, o, term)
		if err != nil {
			return err
		}
		buckets := map[uint64]string{}
		stop := false
		forPostings(l, func(doc uint64, tf retrieval.TF) bool {
			b, ok := buckets[doc/lensBucket]
			if !ok {
				b, _ = p.s.rdb.Get(ctx, p.s.k.lens(o, doc)).Result()
				buckets[doc/lensBucket] = b
			}
			stop = !fn(retrieval.Posting{Doc: uint64(i)<<32 | doc, TF: tf, Len: lensOf(b, doc)})
			return !stop
		})
		if stop {
			return nil
		}
	}
	return nil
}

// TestSearchMatchesReference: the scorer over the store's source (decoded
// lists, index cache cold and warm, TermFreqs rescoring) returns exactly
// the hits it returns over the reference reader, and Search through a store
// with the index cache and head memo returns exactly what a store without
// them returns.
//
// The fast tier runs it on 1,500 QAs and 30 of their questions; the
// integration tier on 3,000 and 60 (TestSearchMatchesReferenceLarge).
func TestSearchMatchesReference(t *testing.T) { searchMatchesReference(t, 1500, 30) }

func searchMatchesReference(t *testing.T, n, nQueries int) {
	ctx := t.Context()
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	open := func(opts ...Option) *Store {
		return openPrefix(t, url, prefix, append([]Option{WithClock(func() time.Time { return now })}, opts...)...)
	}
	cached, uncached := open(), open(WithIndexCache(0))
	const p = "equiv"
	recs := coretest.Corpus(n, p, 3)
	coretest.Load(t, cached, recs)
	queries := coretest.Queries(recs, nQueries)
	queries = append(queries, "absentword", recs[7].Question+" "+recs[8].Answer)
	ref := packedSource{s: cached, owners: []string{p, core.GlobalProject}}
	params := cached.scorer.Params()
	deepParams := params
	deepParams.RescoreDepth = 1 << 20
	deep := retrieval.NewScorer(retrieval.NewAnalyzer(), deepParams)
	for _, budget := range []bool{false, true} {
		sc := cached.scorer
		if budget { // force the rescoring of common terms through TermFreqs
			pp := params
			pp.PostingBudget, pp.RescoreDepth = 300, 40
			sc = retrieval.NewScorer(retrieval.NewAnalyzer(), pp)
		}
		for round := range 2 { // cold, then warm cache
			for _, q := range queries {
				src, err := cached.newSource(ctx, p, q, false)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sc.Search(ctx, src, q, 50)
				if err != nil {
					t.Fatal(err)
				}
				want, err := sc.Search(ctx, ref, q, 50)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("budget=%v round %d %q: hits differ (-reference +store):\n%s", budget, round, q, diff)
				}
				if budget {
					continue
				}
				// With a relevance floor, the common terms are scored one at
				// a time through TermFreqs, candidates dropped in between:
				// the same hits as the reference's term-by-term postings,
				// and, with every candidate followed, the full search's
				// hits above the floor.
				for _, floor := range []float64{0.1, 0.2, 0.35} {
					for _, sc := range []*retrieval.Scorer{sc, deep} {
						got, err := sc.SearchMin(ctx, src, q, 50, floor)
						if err != nil {
							t.Fatal(err)
						}
						want, err := sc.SearchMin(ctx, ref, q, 50, floor)
						if err != nil {
							t.Fatal(err)
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Fatalf("round %d %q min %.2f depth %d: hits differ (-reference +store):\n%s", round, q, floor, sc.Params().RescoreDepth, diff)
						}
					}
					got, err := deep.SearchMin(ctx, src, q, 50, floor)
					if err != nil {
						t.Fatal(err)
					}
					var want []retrieval.Hit
					for _, h := range all(t, deep, ref, q) {
						if h.Relevance >= floor && len(want) < 50 {
							want = append(want, h)
						}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("round %d %q min %.2f: hits differ (-full search +store):\n%s", round, q, floor, diff)
					}
				}
			}
		}
	}
	for round := range 2 {
		for _, q := range queries {
			req := core.SearchRequest{ProjectID: p, Query: q, Limit: 10, MinScore: 0.01}
			want, err := uncached.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cached.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d %q: matches differ (-uncached +cached):\n%s", round, q, diff)
			}
			if round == 0 && len(got) > 0 {
				// Another process validates the best match: the next round
				// must see its new trust state (the head memo keys on the
				// record's value).
				vctx := core.WithPrincipal(ctx, core.Principal{ID: "agent-" + strconv.Itoa(len(q))})
				if _, err := uncached.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: got[0].QAID, Result: "fail", SignalStrength: "strong"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func all(t *testing.T, sc *retrieval.Scorer, src retrieval.Source, q string) []retrieval.Hit {
	t.Helper()
	hits, err := sc.Search(t.Context(), src, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
