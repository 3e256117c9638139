package embedded

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// buildStore imports n synthetic QAs into a new store file at path and
// returns search queries drawn from them.
func buildStore(b *testing.B, path string, n int) []string {
	b.Helper()
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	recs := coretest.Corpus(n, "bench", 1)
	for i := 0; i < n; i += 5000 {
		if err := s.Import(b.Context(), recs[i:min(i+5000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	return coretest.Queries(recs, 256)
}

func benchStore(b *testing.B, n int, opts ...Option) (*Store, []string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "memex.db")
	queries := buildStore(b, path, n)
	s, err := Open(path, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, queries
}

// BenchmarkSearch measures one search (open, postings, top records, rank,
// close) at 10k and 100k QAs, per operation (the default, multi-process
// mode) and with the file kept open (memex serve). Each store is built
// once, in the parent benchmark's TempDir, and shared by both modes.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		var path string
		var queries []string
		dir := b.TempDir()
		for _, mode := range []string{"per-op", "keep-open"} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, mode), func(b *testing.B) {
				if path == "" {
					path = filepath.Join(dir, "memex.db")
					queries = buildStore(b, path, n)
				}
				var opts []Option
				if mode == "keep-open" {
					opts = append(opts, WithKeepOpen())
				}
				s, err := Open(path, opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: "bench", Query: queries[i%len(queries)], Limit: core.DefaultSearchLimit}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkImport measures import throughput in batches of 1,000 records.
func BenchmarkImport(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "memex.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 1000
	recs := coretest.Corpus(batch*200, "bench", 2)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		chunk := recs[(i*batch)%len(recs) : (i*batch)%len(recs)+batch]
		if err := s.Import(b.Context(), chunk); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(batch*i)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkValidate measures one validation at 10k QAs.
func BenchmarkValidate(b *testing.B) {
	s, _ := benchStore(b, 10_000)
	ctx := core.WithPrincipal(b.Context(), core.Principal{ID: "bench"})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("bench-%d", i%10_000)
		if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "bench", QAID: id, Result: "pass", SignalStrength: "weak"}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
