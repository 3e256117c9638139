package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/evalset"
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

// benchDirEnv names a directory where BenchmarkSearch keeps its stores
// between runs (building the 100k store takes a while); unset, each run
// builds them in a temporary directory.
const benchDirEnv = "MEMEX_BENCH_DIR"

// BenchmarkSearch measures one search (open, postings, top records, rank,
// close) at 10k and 100k QAs, per operation (the default, multi-process
// mode) and with the file kept open (memex serve). Each store is built
// once, in the parent benchmark's TempDir (or $MEMEX_BENCH_DIR), and shared
// by both modes.
func BenchmarkSearch(b *testing.B) {
	keep := os.Getenv(benchDirEnv)
	for _, n := range []int{10_000, 100_000} {
		var path string
		var queries []string
		dir := keep
		if dir == "" {
			dir = b.TempDir()
		}
		for _, mode := range []string{"per-op", "keep-open"} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, mode), func(b *testing.B) {
				if path == "" {
					path = filepath.Join(dir, fmt.Sprintf("search-%d.db", n))
					if _, err := os.Stat(path); keep != "" && err == nil {
						queries = coretest.Queries(coretest.Corpus(n, "bench", 1), 256)
					} else {
						queries = buildStore(b, path, n)
					}
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
				defer reportRusage(b)()
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

// BenchmarkOpen measures Open (what every memex process pays once) and one
// search in a fresh Store, as a memex search process does, at 100k QAs.
func BenchmarkOpen(b *testing.B) {
	const n = 100_000
	dir := os.Getenv(benchDirEnv)
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("search-%d.db", n))
	var queries []string
	if _, err := os.Stat(path); err == nil && dir != "" {
		queries = coretest.Queries(coretest.Corpus(n, "bench", 1), 256)
	} else {
		queries = buildStore(b, path, n)
	}
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
		}
	})
	b.Run("open+search", func(b *testing.B) {
		b.ReportAllocs()
		defer reportRusage(b)()
		i := 0
		for b.Loop() {
			s, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: "bench", Query: queries[i%len(queries)], Limit: core.DefaultSearchLimit}); err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
			i++
		}
	})
}

// BenchmarkSearchSynthetic measures one per-operation search at 100k QAs of
// the Zipf-distributed synthetic corpus and ~200-character queries that
// memex-bench process uses (its store, like BenchmarkSearch's, is kept in
// $MEMEX_BENCH_DIR when set).
func BenchmarkSearchSynthetic(b *testing.B) {
	const n = 100_000
	dir := os.Getenv(benchDirEnv)
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("synthetic-%d.db", n))
	if _, err := os.Stat(path); err != nil {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		syn := evalset.NewSynthetic(1)
		recs := make([]core.Record, 0, 5000)
		for i := range n {
			r := syn.Record(i)
			recs = append(recs, core.Record{QAID: r.ID, ProjectID: "bench", Question: r.Question, Answer: r.Answer,
				ContentHash: core.ContentHash(r.Question, r.Answer)})
			if len(recs) == cap(recs) || i == n-1 {
				if err := s.Import(b.Context(), recs); err != nil {
					b.Fatal(err)
				}
				recs = recs[:0]
			}
		}
		_ = s.Close()
	}
	syn := evalset.NewSynthetic(n + 1000)
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = syn.Query()
	}
	// min=0.2 is what memex run and the service ask (min_score's
	// default): the scorer skips what cannot pass.
	for _, c := range []struct {
		mode string
		min  float64
	}{{"per-op", 0}, {"keep-open", 0}, {"keep-open/min=0.2", core.DefaultMinScore}} {
		b.Run(c.mode, func(b *testing.B) {
			var opts []Option
			if c.mode != "per-op" {
				opts = append(opts, WithKeepOpen())
			}
			s, err := Open(path, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			defer reportRusage(b)()
			i := 0
			for b.Loop() {
				if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: "bench", Query: queries[i%len(queries)], Limit: core.DefaultSearchLimit, MinScore: c.min}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// openSynthetic opens the 100k synthetic store BenchmarkSearchSynthetic
// leaves in $MEMEX_BENCH_DIR (skipping without it), closed at the end of b.
func openSynthetic(b *testing.B) *Store {
	dir := os.Getenv(benchDirEnv)
	path := filepath.Join(dir, "synthetic-100000.db")
	if _, err := os.Stat(path); dir == "" || err != nil {
		b.Skip("run BenchmarkSearchSynthetic with " + benchDirEnv + " set first")
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkValidateSynthetic measures one per-operation validation (a
// read-write open, one transaction, a commit) on the 100k synthetic store
// of BenchmarkSearchSynthetic, which must exist in $MEMEX_BENCH_DIR.
func BenchmarkValidateSynthetic(b *testing.B) {
	s := openSynthetic(b)
	ctx := core.WithPrincipal(b.Context(), core.Principal{ID: "bench"})
	b.ReportAllocs()
	defer reportRusage(b)()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("syn-%d", (i*7919)%100_000)
		if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "bench", QAID: id, Result: "pass", SignalStrength: "weak"}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRecordRunSynthetic measures one per-operation RecordRun (a
// read-write open, one transaction, a commit) on the 100k synthetic store
// of BenchmarkSearchSynthetic, which must exist in $MEMEX_BENCH_DIR: a
// run's hit and validation of a shown QA, and a run's new candidate (its
// duplicate check included), each with its event id as memex run sends
// them.
func BenchmarkRecordRunSynthetic(b *testing.B) {
	s := openSynthetic(b)
	ctx := b.Context()
	b.Run("validation+hit", func(b *testing.B) {
		b.ReportAllocs()
		defer reportRusage(b)()
		i := 0
		for b.Loop() {
			id := fmt.Sprintf("syn-%d", (i*7919)%100_000)
			run := fmt.Sprintf("run-%d", i)
			_, err := s.RecordRun(ctx, core.RunReport{
				Hit:         &core.HitRequest{ProjectID: "bench", RunID: run, EventID: "h-" + run, References: []core.HitRef{{QAID: id, Shown: true, Used: true}}},
				Validations: []core.ValidateRequest{{ProjectID: "bench", QAID: id, RunID: run, EventID: "v-" + run, Result: "pass", SignalStrength: "weak"}},
			})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("candidate", func(b *testing.B) {
		syn := evalset.NewSynthetic(uint64(time.Now().UnixNano()))
		b.ReportAllocs()
		defer reportRusage(b)()
		i := 0
		for b.Loop() {
			r := syn.Record(200_000 + i)
			_, err := s.RecordRun(ctx, core.RunReport{Candidate: &core.CandidateRequest{ProjectID: "bench", RunID: fmt.Sprintf("run-%d", i), EventID: fmt.Sprintf("c-%d-%d", time.Now().UnixNano(), i),
				Question: r.Question, Answer: r.Answer}})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
