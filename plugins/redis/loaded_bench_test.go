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
// questions of the project's newest 2,000 QAs (question), or each of them
// followed by words of another up to ~200 characters, like an agent's
// prompt (prompt).
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
	prompts := make([]string, len(queries))
	for i, q := range queries {
		p := q + " " + queries[(i*7+13)%len(queries)]
		if len(p) > 200 {
			cut := 200
			for cut > len(q) && p[cut] != ' ' {
				cut--
			}
			p = p[:cut]
		}
		prompts[i] = p
	}
	for _, bc := range []struct {
		name    string
		queries []string
	}{{"question", queries}, {"prompt", prompts}} {
		b.Run(bc.name, func(b *testing.B) {
			for _, q := range bc.queries { // warm the index cache
				if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: f[2], Query: q, MinScore: core.DefaultMinScore}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			done := reportCPU(b)
			heads, reps := s.headReads.Load(), s.repReads.Load()
			var i atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					q := bc.queries[int(i.Add(1))%len(bc.queries)]
					if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: f[2], Query: q, MinScore: core.DefaultMinScore}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			done()
			b.ReportMetric(float64(s.headReads.Load()-heads)/float64(b.N), "records-read/op")
			b.ReportMetric(float64(s.repReads.Load()-reps)/float64(b.N), "rep-fields-read/op")
			s.cache.mu.Lock()
			b.ReportMetric(float64(s.cache.bytes)/(1<<20), "cacheMiB")
			s.cache.mu.Unlock()
		})
	}
}
