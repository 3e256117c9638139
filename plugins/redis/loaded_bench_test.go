package redisstore

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memex-dev/memex/core"
)

// BenchmarkSearchLoaded measures parallel searches (64 goroutines) over
// data another run left in Redis, e.g. memex-bench service -keep:
// MEMEX_BENCH_LOADED="<redis URL> <prefix> <project>". The queries are the
// questions of the project's newest 2,000 QAs.
func BenchmarkSearchLoaded(b *testing.B) {
	f := strings.Fields(os.Getenv("MEMEX_BENCH_LOADED"))
	if len(f) != 3 {
		b.Skip(`set MEMEX_BENCH_LOADED="<redis URL> <prefix> <project>"`)
	}
	s, err := Open(b.Context(), f[0], WithPrefix(f[1]))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var queries []string
	page := core.ListPage{NextCursor: ""}
	for len(queries) < 2000 {
		page, err = s.List(b.Context(), core.ListRequest{ProjectID: f[2], Limit: 200, Cursor: page.NextCursor})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range page.Items {
			queries = append(queries, r.Question)
		}
		if page.NextCursor == "" {
			break
		}
	}
	if len(queries) == 0 {
		b.Fatal("no QAs under that prefix and project")
	}
	for _, q := range queries { // warm the index cache
		if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: f[2], Query: q, MinScore: core.DefaultMinScore}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q := queries[int(i.Add(1))%len(queries)]
			if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: f[2], Query: q, MinScore: core.DefaultMinScore}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	s.cache.mu.Lock()
	b.ReportMetric(float64(s.cache.bytes)/(1<<20), "cacheMiB")
	s.cache.mu.Unlock()
}
