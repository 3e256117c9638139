package retrieval

import (
	"cmp"
	"context"
	"math"
	"slices"
)

// Params tune BM25F.
type Params struct {
	K1          float64
	B           float64
	FieldWeight [NumFields]float64
}

// DefaultParams are the tuned defaults.
func DefaultParams() Params {
	return Params{K1: 1.2, B: 0.75, FieldWeight: [NumFields]float64{2, 1}}
}

// Scorer ranks documents of a Source for a query. Safe for concurrent use.
type Scorer struct {
	a *Analyzer
	p Params
}

// NewScorer returns a scorer using a to analyse queries.
func NewScorer(a *Analyzer, p Params) *Scorer { return &Scorer{a: a, p: p} }

// Search returns the k best documents for query, best first (ties: lower
// Doc first). PLACEHOLDER implementation.
func (s *Scorer) Search(ctx context.Context, src Source, query string, k int) ([]Hit, error) {
	st, err := src.Stats(ctx)
	if err != nil || st.Docs == 0 {
		return nil, err
	}
	seen := map[string]bool{}
	acc := map[uint64]float64{}
	var maxScore float64
	for _, t := range s.a.Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		df, err := src.DocFreq(ctx, t)
		if err != nil {
			return nil, err
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(st.Docs)-float64(df)+0.5)/(float64(df)+0.5))
		maxScore += idf
		err = src.Postings(ctx, t, func(p Posting) bool {
			var w float64
			for f := range NumFields {
				w += s.p.FieldWeight[f] * float64(p.TF[f])
			}
			acc[p.Doc] += idf * w / (w + s.p.K1)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	hits := make([]Hit, 0, len(acc))
	for d, sc := range acc {
		hits = append(hits, Hit{Doc: d, Score: sc, Relevance: sc / maxScore})
	}
	slices.SortFunc(hits, func(a, b Hit) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Doc, b.Doc)) })
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits, ctx.Err()
}
