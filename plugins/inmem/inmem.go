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
type Option func(*options)

type options struct{ now func() time.Time }

// WithClock injects the clock of created_at and updated_at.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Store is the in-memory namespaced store (core.NewItemStore over a sorted
// map). Safe for concurrent use.
type Store struct{ core.ItemStore }

var (
	_ core.ItemStore   = (*Store)(nil)
	_ core.ItemBackend = (*memory)(nil)
)

// New returns an empty store.
func New(opts ...Option) *Store {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	scorer := retrieval.NewScorer(retrieval.NewAnalyzer(), retrieval.DefaultParams())
	return &Store{core.NewItemStore(&memory{items: map[string]core.Item{}}, scorer, o.now)}
}

// memory holds the items: the primitives of core.ItemBackend, each under
// one lock.
type memory struct {
	mu    sync.RWMutex
	items map[string]core.Item // by core.ItemID
	ids   []string             // sorted
}

func (m *memory) ItemError(_ context.Context, op string, err error) error {
	return fmt.Errorf("inmem: %s: %w", op, err)
}

func (m *memory) PutItem(ctx context.Context, it core.Item, maxEntries int) (*core.Item, error) {
	id := core.ItemID(it.Namespace, it.Key)
	it.Namespace, it.Value = slices.Clone(it.Namespace), slices.Clone(it.Value)
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, exists := m.items[id]; exists {
		it.CreatedAt = prev.CreatedAt
		m.items[id] = it
		return &prev, nil
	}
	if maxEntries > 0 && m.countLocked(it.Namespace) >= maxEntries {
		return nil, m.ItemError(ctx, "put item", core.NamespaceFull(maxEntries))
	}
	m.items[id] = it
	i, _ := slices.BinarySearch(m.ids, id)
	m.ids = slices.Insert(m.ids, i, id)
	return nil, nil
}

// countLocked counts the items of exactly ns.
func (m *memory) countLocked(ns core.Namespace) int {
	p := core.NamespacePrefixID(ns) + "\x01"
	i, _ := slices.BinarySearch(m.ids, p)
	n := 0
	for ; i < len(m.ids) && strings.HasPrefix(m.ids[i], p); i++ {
		n++
	}
	return n
}

func (m *memory) GetItem(_ context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	it, ok := m.items[core.ItemID(ns, key)]
	return it, ok, nil
}

func (m *memory) ScanItems(_ context.Context, prefix core.Namespace, after string, n int) ([]core.Item, error) {
	p := core.NamespacePrefixID(prefix)
	start := p
	if after > start {
		start = after + "\x00"
	}
	var out []core.Item
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, _ := slices.BinarySearch(m.ids, start)
	for ; i < len(m.ids) && strings.HasPrefix(m.ids[i], p) && len(out) < n; i++ {
		out = append(out, m.items[m.ids[i]])
	}
	return out, nil
}

func (m *memory) DeleteItem(_ context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	id := core.ItemID(ns, key)
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[id]
	if !ok {
		return core.Item{}, false, nil
	}
	delete(m.items, id)
	if i, found := slices.BinarySearch(m.ids, id); found {
		m.ids = slices.Delete(m.ids, i, i+1)
	}
	return it, true, nil
}

func (m *memory) ClearItems(_ context.Context, prefix core.Namespace) (int, error) {
	p := core.NamespacePrefixID(prefix)
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearch(m.ids, p)
	j := i
	for ; j < len(m.ids) && strings.HasPrefix(m.ids[j], p); j++ {
		delete(m.items, m.ids[j])
	}
	m.ids = slices.Delete(m.ids, i, j)
	return j - i, nil
}
