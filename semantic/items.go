package semantic

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/memex-dev/memex/core"
)

// Items makes a namespaced store's Search hybrid (seed 001's vector
// store, docs/SCOPES.md): with a query, the items under the prefix are
// scored by (1−weight)·lexical relevance + weight·cosine similarity of
// their text to the query's, and an item the lexical search missed counts
// only when its similarity reaches MinItemSimilarity. Without a query, and
// whenever the embedder fails (fail open: the lexical answer), it is the
// inner store's Search. Every other method is the inner store's.
type Items struct {
	inner  core.ItemStore
	emb    Embedder
	weight float64
	cache  *Cache
	log    *slog.Logger
}

// MinItemSimilarity is the cosine an item without lexical relevance needs
// to be a semantic hit.
const MinItemSimilarity = 0.5

var _ core.ItemStore = (*Items)(nil)

// NewItems wraps inner. weight is in (0,1]; cache may be nil (embeddings of
// item texts are then recomputed by every search); log nil is silent.
func NewItems(inner core.ItemStore, e Embedder, weight float64, cache *Cache, log *slog.Logger) (*Items, error) {
	if inner == nil || e == nil {
		return nil, fmt.Errorf("semantic: items: %w", core.Invalid("embedder", "is required"))
	}
	if !(weight > 0 && weight <= 1) {
		return nil, fmt.Errorf("semantic: items: %w", core.Invalid("weight", "must be in (0,1]"))
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Items{inner: inner, emb: e, weight: weight, cache: cache, log: log}, nil
}

// Put is the inner store's.
func (s *Items) Put(ctx context.Context, req core.PutRequest) (core.PutResult, error) {
	return s.inner.Put(ctx, req)
}

// Get is the inner store's.
func (s *Items) Get(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	return s.inner.Get(ctx, ns, key)
}

// List is the inner store's.
func (s *Items) List(ctx context.Context, req core.ListItemsRequest) (core.ItemPage, error) {
	return s.inner.List(ctx, req)
}

// Delete is the inner store's.
func (s *Items) Delete(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	return s.inner.Delete(ctx, ns, key)
}

// Clear is the inner store's.
func (s *Items) Clear(ctx context.Context, prefix core.Namespace) (int, error) {
	return s.inner.Clear(ctx, prefix)
}

// Search is hybrid with a query (see Items).
func (s *Items) Search(ctx context.Context, req core.SearchItemsRequest) ([]core.Item, error) {
	if strings.TrimSpace(req.Query) == "" {
		return s.inner.Search(ctx, req)
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("semantic: search items: %w", err)
	}
	lexReq := req
	lexReq.Limit = core.MaxItemTopK
	lexical, err := s.inner.Search(ctx, lexReq)
	if err != nil {
		return nil, err
	}
	fused, err := s.fuse(ctx, req, lexical)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("semantic: search items: %w", ctx.Err())
		}
		s.log.Warn("semantic item search failed; lexical results", "op", "search items", "error", err)
		return lexical[:min(len(lexical), core.ItemTopK(req.Limit))], nil
	}
	return fused, nil
}

func (s *Items) fuse(ctx context.Context, req core.SearchItemsRequest, lexical []core.Item) ([]core.Item, error) {
	var all []core.Item
	cursor := ""
	for len(all) < core.MaxItemSearchScan {
		page, err := s.inner.List(ctx, core.ListItemsRequest{Prefix: req.Prefix, Limit: core.MaxItemListSize, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if core.MatchFilter(it.Value, req.Filter) {
				all = append(all, it)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	lex := make(map[string]float64, len(lexical))
	for _, it := range lexical {
		lex[core.ItemID(it.Namespace, it.Key)] = it.Score
	}
	texts := make([]string, 0, len(all)+1)
	texts = append(texts, req.Query)
	for _, it := range all {
		texts = append(texts, core.ItemText(it))
	}
	vecs, err := s.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	q := vecs[0]
	out := make([]core.Item, 0, len(all))
	for i, it := range all {
		sim := Cosine(q, vecs[i+1])
		l, ok := lex[core.ItemID(it.Namespace, it.Key)]
		if !ok && sim < MinItemSimilarity {
			continue
		}
		it.Score = (1-s.weight)*l + s.weight*max(sim, 0)
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b core.Item) int { return cmp.Compare(b.Score, a.Score) })
	return out[:min(len(out), core.ItemTopK(req.Limit))], nil
}

// embed embeds texts, through the cache when there is one.
func (s *Items) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	var at []int
	for i, t := range texts {
		if s.cache != nil {
			if v, ok := s.cache.Get(s.emb.Name(), t); ok {
				out[i] = v
				continue
			}
		}
		miss = append(miss, t)
		at = append(at, i)
	}
	if len(miss) == 0 {
		return out, nil
	}
	vecs, err := s.emb.Embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(miss) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts: %w", len(vecs), len(miss), core.ErrInvalid)
	}
	for j, v := range vecs {
		out[at[j]] = v
		if s.cache != nil {
			s.cache.Put(s.emb.Name(), miss[j], v)
		}
	}
	return out, nil
}
