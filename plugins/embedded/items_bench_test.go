package embedded

import (
	"fmt"
	"math/rand"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// benchItems100k is a store holding 100k items: 1,000 users × 100 notes
// (filled in one transaction: the figure is the lookups', not the fill's).
func benchItems100k(b *testing.B) core.ItemStore {
	b.Helper()
	s := newTestStore(b, WithKeepOpen())
	words := []string{"tests", "table", "driven", "parser", "format", "sql", "editor", "helix", "tabs", "go", "review", "deploy"}
	r := rand.New(rand.NewSource(1))
	now := s.cfg.clock().UTC()
	err := s.update(b.Context(), "fill", func(tx *bolt.Tx) error {
		items, counts := tx.Bucket(bItems), tx.Bucket(bItemCount)
		for u := range 1000 {
			ns := core.Namespace{"user", fmt.Sprintf("u%04d", u)}
			for k := range 100 {
				text := fmt.Sprintf(`{"text":"%s %s %s note %d"}`, words[r.Intn(len(words))], words[r.Intn(len(words))], words[r.Intn(len(words))], k)
				it := core.Item{Namespace: ns, Key: fmt.Sprintf("n%03d", k), Value: []byte(text), CreatedAt: now, UpdatedAt: now}
				if err := items.Put([]byte(core.ItemID(ns, it.Key)), core.EncodeItemEntry(it)); err != nil {
					return err
				}
			}
			if err := addCount(counts, ns, 100); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s.Items()
}

// BenchmarkItems100k: put (overwrite), get and search (one user's 100
// notes, with a query) on a store of 100k items (docs/PERFORMANCE.md).
func BenchmarkItems100k(b *testing.B) {
	st := benchItems100k(b)
	b.Run("put", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ns := core.Namespace{"user", fmt.Sprintf("u%04d", i%1000)}
			if _, err := st.Put(b.Context(), core.PutRequest{Namespace: ns, Key: fmt.Sprintf("n%03d", i%100), Value: []byte(`{"text":"prefers table-driven tests"}`)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok, err := st.Get(b.Context(), core.Namespace{"user", fmt.Sprintf("u%04d", i%1000)}, fmt.Sprintf("n%03d", i%100)); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("search", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := st.Search(b.Context(), core.SearchItemsRequest{Prefix: core.Namespace{"user", fmt.Sprintf("u%04d", i%1000)}, Query: "table driven tests"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
