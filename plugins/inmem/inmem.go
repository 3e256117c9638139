// Package inmem is an in-memory core.ItemStore: the namespaced store for
// tests and for library users who keep their entries in the process
// (the langgraph seed's InMemoryStore). It holds nothing on disk.
package inmem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
)

// Option configures a Store.
type Option func(*Store)

// WithClock injects the clock of created_at and updated_at.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Store is the in-memory namespaced store. Safe for concurrent use.
type Store struct {
	now    func() time.Time
	scorer *retrieval.Scorer

	mu    sync.RWMutex
	items map[string]core.Item // by core.ItemID
	ids   []string             // sorted
}

var _ core.ItemStore = (*Store)(nil)

// New returns an empty store.
func New(opts ...Option) *Store {
	a := retrieval.NewAnalyzer()
	s := &Store{now: time.Now, scorer: retrieval.NewScorer(a, retrieval.DefaultParams()), items: map[string]core.Item{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func wrap(op string, err error) error { return fmt.Errorf("inmem: %s: %w", op, err) }

// Put stores req.Value under (req.Namespace, req.Key).
func (s *Store) Put(ctx context.Context, req core.PutRequest) (core.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return core.PutResult{}, wrap("put", err)
	}
	if err := req.Validate(); err != nil {
		return core.PutResult{}, wrap("put", err)
	}
	id := core.ItemID(req.Namespace, req.Key)
	now := s.now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, exists := s.items[id]
	if !exists && req.MaxEntries > 0 && s.countLocked(req.Namespace) >= req.MaxEntries {
		return core.PutResult{}, wrap("put", &core.QuotaError{Limit: "entries per namespace", Max: req.MaxEntries})
	}
	it := core.Item{Namespace: slices.Clone(req.Namespace), Key: req.Key, Value: slices.Clone(req.Value), CreatedAt: now, UpdatedAt: now}
	var res core.PutResult
	if exists {
		it.CreatedAt = prev.CreatedAt
		res.Previous = &prev
	} else {
		i, _ := slices.BinarySearch(s.ids, id)
		s.ids = slices.Insert(s.ids, i, id)
	}
	s.items[id] = it
	res.Item = it
	return res, nil
}

// countLocked counts the items of exactly ns.
func (s *Store) countLocked(ns core.Namespace) int {
	p := core.NamespacePrefixID(ns) + "\x01"
	i, _ := slices.BinarySearch(s.ids, p)
	n := 0
	for ; i < len(s.ids) && strings.HasPrefix(s.ids[i], p); i++ {
		n++
	}
	return n
}

// Get returns the item, or false.
func (s *Store) Get(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return core.Item{}, false, wrap("get", err)
	}
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, wrap("get", err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, wrap("get", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items[core.ItemID(ns, key)]
	return it, ok, nil
}

// scan calls fn for the items under prefix after the id after, in order,
// until fn returns false.
func (s *Store) scanLocked(prefix core.Namespace, after string, fn func(id string, it core.Item) bool) {
	p := core.NamespacePrefixID(prefix)
	start := p
	if after > start {
		start = after + "\x00"
	}
	i, _ := slices.BinarySearch(s.ids, start)
	for ; i < len(s.ids) && strings.HasPrefix(s.ids[i], p); i++ {
		if !fn(s.ids[i], s.items[s.ids[i]]) {
			return
		}
	}
}

// List returns a page of the items under req.Prefix.
func (s *Store) List(ctx context.Context, req core.ListItemsRequest) (core.ItemPage, error) {
	if err := ctx.Err(); err != nil {
		return core.ItemPage{}, wrap("list", err)
	}
	if err := req.Validate(); err != nil {
		return core.ItemPage{}, wrap("list", err)
	}
	after, _ := core.DecodeItemCursor(req.Cursor)
	limit := core.ItemListLimit(req.Limit)
	page := core.ItemPage{Items: []core.Item{}}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var last string
	s.scanLocked(req.Prefix, after, func(id string, it core.Item) bool {
		if len(page.Items) == limit {
			page.NextCursor = core.EncodeItemCursor(last)
			return false
		}
		page.Items = append(page.Items, it)
		last = id
		return true
	})
	return page, nil
}

// Search finds items under req.Prefix (retrieval.SearchItems).
func (s *Store) Search(ctx context.Context, req core.SearchItemsRequest) ([]core.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("search", err)
	}
	if err := req.Validate(); err != nil {
		return nil, wrap("search", err)
	}
	var items []core.Item
	s.mu.RLock()
	s.scanLocked(req.Prefix, "", func(_ string, it core.Item) bool {
		items = append(items, it)
		return len(items) < core.MaxItemSearchScan
	})
	s.mu.RUnlock()
	out, err := retrieval.SearchItems(ctx, s.scorer, req, items)
	if err != nil {
		return nil, wrap("search", err)
	}
	return out, nil
}

// Delete removes the item and returns it.
func (s *Store) Delete(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return core.Item{}, false, wrap("delete", err)
	}
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, wrap("delete", err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, wrap("delete", err)
	}
	id := core.ItemID(ns, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	if !ok {
		return core.Item{}, false, nil
	}
	delete(s.items, id)
	if i, found := slices.BinarySearch(s.ids, id); found {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
	return it, true, nil
}

// Clear removes every item under prefix.
func (s *Store) Clear(ctx context.Context, prefix core.Namespace) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, wrap("clear", err)
	}
	if err := prefix.Validate(); err != nil {
		return 0, wrap("clear", err)
	}
	p := core.NamespacePrefixID(prefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.ids, p)
	j := i
	for ; j < len(s.ids) && strings.HasPrefix(s.ids[j], p); j++ {
		delete(s.items, s.ids[j])
	}
	s.ids = slices.Delete(s.ids, i, j)
	return j - i, nil
}
