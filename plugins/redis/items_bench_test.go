package redisstore

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
)

// BenchmarkItems100k: put (overwrite), get and search (one user's 100
// notes, with a query) on a store of 100k items: 1,000 users × 100 notes,
// written by pipelines (docs/PERFORMANCE.md).
func BenchmarkItems100k(b *testing.B) {
	s := newShared(b)
	x := &items{s: s}
	words := []string{"tests", "table", "driven", "parser", "format", "sql", "editor", "helix", "tabs", "go", "review", "deploy"}
	r := rand.New(rand.NewSource(1))
	now := s.cfg.clock().UTC()
	for user := range 1000 {
		ns := core.Namespace{"user", fmt.Sprintf("u%04d", user)}
		tag := tagOf(ns)
		_, err := s.rdb.Pipelined(b.Context(), func(p redis.Pipeliner) error {
			p.ZAdd(b.Context(), x.tags(), redis.Z{Member: tag})
			for k := range 100 {
				id := core.ItemID(ns, fmt.Sprintf("n%03d", k))
				text := fmt.Sprintf(`{"text":"%s %s %s note %d"}`, words[r.Intn(len(words))], words[r.Intn(len(words))], words[r.Intn(len(words))], k)
				p.ZAdd(b.Context(), x.z(tag), redis.Z{Member: id})
				p.HSet(b.Context(), x.h(tag), id, string(core.EncodeItemEntry(core.Item{CreatedAt: now, UpdatedAt: now, Value: []byte(text)})))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	st := s.Items()
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
