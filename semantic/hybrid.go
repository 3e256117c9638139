package semantic

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/memex-dev/memex/core"
)

// Defaults of HybridConfig.
const (
	DefaultWeight     = 0.3
	DefaultCandidates = 50
)

// HybridConfig is the [semantic] section once parsed (see docs/SEMANTIC.md).
type HybridConfig struct {
	// Weight is w of the fusion, in [0,1] (0 → off: no embedder call).
	Weight float64
	// Fusion is FusionLinear (default) or FusionRRF.
	Fusion Fusion
	// Candidates is how many lexical matches are asked of the store and
	// reranked (0 → DefaultCandidates; at most core.MaxSearchLimit, the
	// largest limit every store accepts).
	Candidates int
	// Timeout bounds the embedding step of one search (0 → none beyond the
	// caller's context). Keep it below memory.timeout so a slow model falls
	// back to the lexical order while there is still time to use it.
	Timeout time.Duration
	// QueryCache and DocCache bound the in-memory LRU caches of query and
	// QA vectors (0 → DefaultCacheSize and 16·DefaultCandidates).
	QueryCache, DocCache int
}

// Searcher is the part of core.MemoryPlugin Hybrid needs.
type Searcher interface {
	Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error)
}

// Hybrid runs hybrid search over any store: it asks the store for the top
// Candidates lexical matches, reranks them with Rerank, puts the fused score
// in Match.Relevance and orders them again with core.Rank (so trust,
// freshness and level still count, and min_score applies to the fused
// relevance). It is safe for concurrent use.
type Hybrid struct {
	e      Embedder
	cfg    HybridConfig
	qcache *Cache
	dcache *Cache
	vs     VectorStore
	log    *slog.Logger
}

// VectorStore is an optional persistent cache of QA vectors, so a one-shot
// `memex run` does not embed its candidates again on every run. Keys are
// opaque strings made by Hybrid ("<project>/<qa_id>/<hash of question and
// answer>"), so an edited QA simply misses; values are Encode'd vectors.
// model is the Embedder's Name: vectors of one model are never served to
// another. Both methods are best effort: Hybrid treats an error as a miss
// (GetVectors) or ignores it (PutVectors), logging it at debug level.
type VectorStore interface {
	// GetVectors returns the vectors it holds among keys (missing keys are
	// simply absent from the map).
	GetVectors(ctx context.Context, model string, keys []string) (map[string][]byte, error)
	// PutVectors stores vectors (overwriting).
	PutVectors(ctx context.Context, model string, vecs map[string][]byte) error
}

// HybridOption configures a Hybrid.
type HybridOption func(*Hybrid)

// WithVectorStore makes Hybrid read QA vectors from vs before embedding and
// write the ones it embedded.
func WithVectorStore(vs VectorStore) HybridOption { return func(h *Hybrid) { h.vs = vs } }

// WithHybridLogger sets the logger (debug-level notes on vector store
// errors; the Store decorator warns on embedder errors). Silent by default.
func WithHybridLogger(l *slog.Logger) HybridOption { return func(h *Hybrid) { h.log = l } }

// NewHybrid validates cfg. e may be nil only when cfg.Weight is 0.
func NewHybrid(e Embedder, cfg HybridConfig, opts ...HybridOption) (*Hybrid, error) {
	if math.IsNaN(cfg.Weight) || cfg.Weight < 0 || cfg.Weight > 1 {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("weight", "must be in [0,1]"))
	}
	if cfg.Fusion != FusionLinear && cfg.Fusion != FusionRRF {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("fusion", `must be "linear" or "rrf"`))
	}
	if cfg.Candidates < 0 || cfg.Candidates > core.MaxSearchLimit {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("candidates", "must be in [1,%d]", core.MaxSearchLimit))
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("timeout", "must not be negative"))
	}
	if cfg.Weight > 0 && e == nil {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("embedder", "is required when weight > 0"))
	}
	if cfg.Candidates == 0 {
		cfg.Candidates = DefaultCandidates
	}
	if cfg.DocCache <= 0 {
		cfg.DocCache = 16 * DefaultCandidates
	}
	h := &Hybrid{e: e, cfg: cfg, qcache: NewCache(cfg.QueryCache), dcache: NewCache(cfg.DocCache)}
	for _, opt := range opts {
		opt(h)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

// Weight is the configured semantic weight (0: off).
func (h *Hybrid) Weight() float64 { return h.cfg.Weight }

// Search answers req like s.Search would, with semantic reranking of the
// lexical candidates. With Weight 0 it is exactly s.Search(ctx, req).
//
// When the embedder fails, Search returns the store's lexical matches
// (ranked for req as usual, never nil) together with a *RerankError whose
// Err wraps core.ErrUnavailable or core.ErrInvalid: use the matches, log the
// error. A store error is returned as is, with no matches.
func (h *Hybrid) Search(ctx context.Context, s Searcher, req core.SearchRequest) ([]core.Match, error) {
	if h.cfg.Weight == 0 {
		return s.Search(ctx, req)
	}
	wide := req
	wide.Limit = max(h.cfg.Candidates, req.Limit)
	wide.MinScore = 0 // a paraphrase may score low lexically
	ms, err := s.Search(ctx, wide)
	if err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = core.DefaultSearchLimit
	}
	out, rerr := h.Rerank(ctx, req.Query, ms)
	out = core.Rank(out, req.MinScore, limit, req.Explain)
	if out == nil {
		out = []core.Match{}
	}
	if rerr != nil {
		return out, &RerankError{Err: rerr}
	}
	return out, nil
}

// RerankError is returned by Hybrid.Search, with the lexical matches, when
// the embedder failed. Err wraps core.ErrUnavailable or core.ErrInvalid.
type RerankError struct{ Err error }

func (e *RerankError) Error() string { return "semantic rerank skipped: " + e.Err.Error() }
func (e *RerankError) Unwrap() error { return e.Err }

// Rerank sets each match's Relevance to the fused relevance (on error it
// leaves them unchanged) and returns the matches in fused order; call
// core.Rank on the result for the final order.
func (h *Hybrid) Rerank(ctx context.Context, query string, ms []core.Match) ([]core.Match, error) {
	if h.cfg.Weight == 0 || len(ms) == 0 {
		return ms, nil
	}
	if h.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.Timeout)
		defer cancel()
	}
	name := h.e.Name()
	cands := make([]Candidate, len(ms))
	keys := make([]string, len(ms))
	had := make([]bool, len(ms))
	var missing []string
	for i, m := range ms {
		text := m.Question + "\n" + m.Answer
		keys[i] = m.ProjectID + "/" + m.QAID + "/" + textHash(text)
		v, ok := h.dcache.Get(name, keys[i])
		had[i] = ok
		if !ok {
			missing = append(missing, keys[i])
		}
		cands[i] = Candidate{ID: strconv.Itoa(i), Text: text, Vector: v, Lexical: m.Relevance}
	}
	if h.vs != nil && len(missing) > 0 {
		got, err := h.vs.GetVectors(ctx, name, missing)
		if err != nil {
			h.log.Debug("semantic: vector store read failed; embedding instead", "model", name, "keys", len(missing), "error", err)
		}
		for i := range cands {
			if b, ok := got[keys[i]]; ok && !had[i] {
				if v, err := Decode(b); err == nil && len(v) > 0 {
					cands[i].Vector = v
					h.dcache.Put(name, keys[i], v)
					had[i] = true
				}
			}
		}
	}
	res, err := Rerank(ctx, h.e, query, cands, h.cfg.Weight, WithFusion(h.cfg.Fusion), WithQueryCache(h.qcache))
	if err != nil {
		return ms, err
	}
	out := make([]core.Match, len(res))
	var put map[string][]byte
	for j, c := range res {
		i, _ := strconv.Atoi(c.ID)
		if c.Vector != nil && (!had[i] || len(c.Vector) != len(cands[i].Vector)) {
			h.dcache.Put(name, keys[i], c.Vector)
			if h.vs != nil {
				if put == nil {
					put = map[string][]byte{}
				}
				put[keys[i]] = Encode(c.Vector)
			}
		}
		out[j] = ms[i]
		out[j].Relevance = c.Score
	}
	if len(put) > 0 {
		if err := h.vs.PutVectors(ctx, name, put); err != nil {
			h.log.Debug("semantic: vector store write failed", "model", name, "vectors", len(put), "error", err)
		}
	}
	return out, nil
}

func textHash(s string) string {
	f := fnv.New64a()
	_, _ = f.Write([]byte(s))
	return strconv.FormatUint(f.Sum64(), 36)
}
