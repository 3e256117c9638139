package semantic

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/memex-dev/memex/core"
)

// Fusion is how Rerank combines the lexical and the semantic signal.
type Fusion int

const (
	// FusionLinear (the default): score = (1−w)·lexical + w·semantic, where
	// semantic = max(0, cosine). Scores stay in [0,1] and keep their
	// meaning, so min_score and the SPEC §4 rank formula work unchanged; a
	// candidate's absolute lexical strength still counts.
	FusionLinear Fusion = iota
	// FusionRRF is weighted reciprocal-rank fusion:
	// score = (k+1)·((1−w)/(k+rank_lex) + w/(k+rank_sem)), ranks from 1,
	// which is 1 for a candidate first in both lists. It ignores score
	// magnitudes, so it is robust to badly calibrated similarities, but
	// even a weak first candidate scores high.
	FusionRRF
)

// DefaultRRFK is the k of reciprocal-rank fusion (Cormack et al., 2009).
const DefaultRRFK = 60

// String returns "linear" or "rrf".
func (f Fusion) String() string {
	switch f {
	case FusionLinear:
		return "linear"
	case FusionRRF:
		return "rrf"
	}
	return fmt.Sprintf("Fusion(%d)", int(f))
}

// ParseFusion reads "linear" (or "") and "rrf".
func ParseFusion(s string) (Fusion, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "linear":
		return FusionLinear, nil
	case "rrf":
		return FusionRRF, nil
	}
	return 0, fmt.Errorf("semantic: %w", core.Invalid("fusion", `must be "linear" or "rrf"`))
}

// Candidate is one result of the lexical search to rerank.
type Candidate struct {
	ID   string
	Text string // what gets embedded (question + answer); may be empty
	// Vector is the candidate's cached embedding, if any (same Embedder);
	// Rerank fills it in for candidates it embedded, so the caller can
	// store it (Encode) and skip the model next time.
	Vector []float32
	// Lexical is the lexical relevance in [0,1].
	Lexical float64

	// Semantic is set by Rerank: max(0, cosine(query, Vector)) in [0,1].
	Semantic float64
	// Score is set by Rerank: the fused relevance in [0,1].
	Score float64
}

// RerankOption tunes Rerank.
type RerankOption func(*rerankOpts)

type rerankOpts struct {
	fusion Fusion
	k      int
	cache  *Cache
}

// WithFusion selects the fusion method (default FusionLinear).
func WithFusion(f Fusion) RerankOption { return func(o *rerankOpts) { o.fusion = f } }

// WithRRFK sets k for FusionRRF (≤ 0 → DefaultRRFK).
func WithRRFK(k int) RerankOption { return func(o *rerankOpts) { o.k = k } }

// WithQueryCache looks the query up in c before calling the embedder and
// stores it there after.
func WithQueryCache(c *Cache) RerankOption { return func(o *rerankOpts) { o.cache = c } }

// Rerank reorders the candidates of a lexical search by fusing their
// lexical relevance with the cosine similarity of their embedding to the
// query's. It never looks beyond cands: the store's lexical search picks
// them, Rerank only reorders (cost: one Embed call for the query, unless
// cached, and for candidates without a usable Vector, plus len(cands)
// cosines).
//
// w is the semantic weight in [0,1]. With w = 0 (semantic search off) the
// result is cands in their given order with Score = Lexical, and the
// embedder is not called. Otherwise the result is sorted by Score
// descending, ties by ID ascending. A nil embedder or a blank query leaves
// the lexical result as with w = 0. Candidates with empty Text and no
// Vector get Semantic 0. A cached Vector whose length differs from the
// embedder's Dimensions is embedded again.
//
// The input slice is not modified. On an embedder error Rerank returns the
// candidates in their given order with Score = Lexical, and the error
// (wrapping core.ErrUnavailable or core.ErrInvalid): a caller that fails
// open uses that slice.
func Rerank(ctx context.Context, e Embedder, query string, cands []Candidate, w float64, opts ...RerankOption) ([]Candidate, error) {
	o := rerankOpts{fusion: FusionLinear, k: DefaultRRFK}
	for _, opt := range opts {
		opt(&o)
	}
	if o.k <= 0 {
		o.k = DefaultRRFK
	}
	out := make([]Candidate, len(cands))
	for i, c := range cands {
		c.Score = clamp01(c.Lexical)
		c.Semantic = 0
		out[i] = c
	}
	if math.IsNaN(w) || w < 0 || w > 1 {
		return out, fmt.Errorf("semantic: rerank: %w", core.Invalid("weight", "must be in [0,1]"))
	}
	if o.fusion != FusionLinear && o.fusion != FusionRRF {
		return out, fmt.Errorf("semantic: rerank: %w", core.Invalid("fusion", "unknown method %d", int(o.fusion)))
	}
	if w == 0 || len(cands) == 0 {
		return out, nil
	}
	if strings.TrimSpace(query) == "" || e == nil {
		return out, nil
	}

	// One Embed call: the query (unless cached) and the candidates that
	// lack a usable vector.
	dims := e.Dimensions()
	qv, cached := o.cache.Get(e.Name(), query)
	var texts []string
	var who []int // index into out; -1 = the query
	if !cached {
		texts, who = append(texts, query), append(who, -1)
	}
	for i, c := range out {
		if c.Vector != nil && (dims == 0 || len(c.Vector) == dims) {
			continue
		}
		out[i].Vector = nil
		if strings.TrimSpace(c.Text) == "" {
			continue
		}
		texts, who = append(texts, c.Text), append(who, i)
	}
	if len(texts) > 0 {
		vs, err := e.Embed(ctx, texts)
		if err == nil && len(vs) != len(texts) {
			err = fmt.Errorf("semantic: rerank: embedder %s returned %d vectors for %d texts: %w", e.Name(), len(vs), len(texts), core.ErrInvalid)
		}
		if err != nil {
			for i := range out {
				out[i].Vector = cands[i].Vector
			}
			return out, fmt.Errorf("semantic: rerank: %w", err)
		}
		for j, i := range who {
			if i < 0 {
				qv = vs[j]
				o.cache.Put(e.Name(), query, qv)
				continue
			}
			out[i].Vector = vs[j]
		}
	}
	qn := math.Sqrt(sumSquares(qv))
	for i := range out {
		if out[i].Vector == nil {
			continue
		}
		if len(out[i].Vector) != len(qv) {
			return fuseFailed(out, cands), fmt.Errorf("semantic: rerank: candidate %q has %d dimensions, query %d: %w", out[i].ID, len(out[i].Vector), len(qv), core.ErrInvalid)
		}
		out[i].Semantic = max(0, cosineNorm(qv, qn, out[i].Vector))
	}

	switch o.fusion {
	case FusionLinear:
		for i := range out {
			out[i].Score = clamp01((1-w)*out[i].Score + w*out[i].Semantic)
		}
	case FusionRRF:
		lex := ranks(out, func(c Candidate) float64 { return c.Score })
		sem := ranks(out, func(c Candidate) float64 { return c.Semantic })
		k := float64(o.k)
		for i := range out {
			out[i].Score = clamp01((k + 1) * ((1-w)/(k+float64(lex[i])) + w/(k+float64(sem[i]))))
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func fuseFailed(out, cands []Candidate) []Candidate {
	for i := range out {
		out[i].Vector, out[i].Semantic = cands[i].Vector, 0
	}
	return out
}

// ranks returns the 1-based rank of each candidate by key descending (ties
// by ID, then input position), as used by RRF.
func ranks(cs []Candidate, key func(Candidate) float64) []int {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(key(cs[b]), key(cs[a])), strings.Compare(cs[a].ID, cs[b].ID))
	})
	r := make([]int, len(cs))
	for pos, i := range idx {
		r[i] = pos + 1
	}
	return r
}

func clamp01(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
