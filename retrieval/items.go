package retrieval

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/memex-dev/memex/core"
)

// RankItems is the lexical search of the namespaced store, shared by every
// core.ItemStore: it scores items (the key as the question field, the
// value's strings as the answer field; core.ItemText) against query with
// s and returns the at most k that match, best first (ties in ItemID
// order), each with Score set to its relevance in [0,1]; the k are
// re-ranked by the query's function words in their keys (Scorer.Rerank).
// The collection statistics are those of items: a search reads the items
// under its prefix (core.MaxItemSearchScan at most) and ranks them here.
func RankItems(ctx context.Context, s *Scorer, query string, items []core.Item, k int) ([]core.Item, error) {
	if len(items) == 0 || k <= 0 {
		return nil, ctx.Err()
	}
	idx := NewMemIndex(s.a)
	for i, it := range items {
		idx.Add(uint64(i), it.Key, core.ItemText(core.Item{Value: it.Value}))
	}
	hits, err := s.Search(ctx, idx, query, len(items))
	if err != nil {
		return nil, err
	}
	order := func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(core.ItemID(items[a.Doc].Namespace, items[a.Doc].Key), core.ItemID(items[b.Doc].Namespace, items[b.Doc].Key))
	}
	slices.SortStableFunc(hits, order)
	// The k best, re-ranked by the query's function words in their keys.
	hits = hits[:min(k, len(hits))]
	s.Rerank(query, hits, func(i int) FunctionWords { return FunctionWordsOf(items[hits[i].Doc].Key) })
	slices.SortStableFunc(hits, order)
	out := make([]core.Item, 0, len(hits))
	for _, h := range hits {
		it := items[h.Doc]
		it.Score = h.Relevance
		out = append(out, it)
	}
	return out, nil
}

// The namespaced store of every store (core.NewItemStore) ranks with a Scorer.
var _ core.ItemSearcher = (*Scorer)(nil)

// SearchItems answers a core.SearchItemsRequest over items, the items under
// req.Prefix in store order: those that match req.Filter, ranked by
// RankItems when there is a query, else the first req.Limit in order.
func (s *Scorer) SearchItems(ctx context.Context, req core.SearchItemsRequest, items []core.Item) ([]core.Item, error) {
	k := core.ItemTopK(req.Limit)
	if len(req.Filter) > 0 {
		kept := items[:0:0]
		for _, it := range items {
			if core.MatchFilter(it.Value, req.Filter) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if strings.TrimSpace(req.Query) == "" {
		out := items[:min(k, len(items))]
		return slices.Clone(out), ctx.Err()
	}
	return RankItems(ctx, s, req.Query, items, k)
}
