package redisstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// benchN is the corpus size of the search benchmark: 10k by default,
// MEMEX_BENCH_QAS=100000 for the 100k run (docs/REDIS.md).
func benchN(b *testing.B) int {
	if v := os.Getenv("MEMEX_BENCH_QAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("MEMEX_BENCH_QAS=%q is not a positive number", v)
		}
		return n
	}
	return 10_000
}

// benchStore loads n synthetic QAs (coretest.Corpus) into a fresh prefix.
func benchStore(b *testing.B, n int) (*Store, []string) {
	b.Helper()
	s := newShared(b)
	recs := coretest.Corpus(n, "bench", 1)
	coretest.Load(b, s, recs)
	return s, coretest.Queries(recs, 256)
}

// BenchmarkSearch measures one search over a project of benchN QAs.
func BenchmarkSearch(b *testing.B) {
	n := benchN(b)
	b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
		s, queries := benchStore(b, n)
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

// BenchmarkSearchParallel measures search throughput with 64 goroutines.
func BenchmarkSearchParallel(b *testing.B) {
	n := benchN(b)
	s, queries := benchStore(b, n)
	b.SetParallelism(32) // × GOMAXPROCS(2) = 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	var i atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q := queries[int(i.Add(1))%len(queries)]
			if _, err := s.Search(b.Context(), core.SearchRequest{ProjectID: "bench", Query: q, Limit: core.DefaultSearchLimit}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkValidateParallel measures validation throughput with 64
// goroutines over a 10k corpus (target ≥ 5,000/s).
func BenchmarkValidateParallel(b *testing.B) {
	const n = 10_000
	s := newShared(b)
	coretest.Load(b, s, coretest.Corpus(n, "bench", 1))
	b.SetParallelism(32) // × GOMAXPROCS(2) = 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	var src atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		ctx := core.WithPrincipal(b.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", src.Add(1))})
		for pb.Next() {
			id := fmt.Sprintf("bench-%d", rand.IntN(n))
			if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "bench", QAID: id, Result: "pass", SignalStrength: "weak"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "validations/s")
}

// BenchmarkStats measures Stats of a project of 10k QAs from its kept
// statistics (built before the timer starts).
func BenchmarkStats(b *testing.B) {
	s := newShared(b)
	coretest.Load(b, s, coretest.Corpus(10_000, "bench", 1))
	if _, err := s.Stats(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Stats(b.Context(), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReindex measures an answer edit of a random QA of a project of
// benchN QAs: the commit script removes the QA's postings and splices the
// new ones into its terms' lists (a sequential scan of each list).
func BenchmarkReindex(b *testing.B) {
	n := benchN(b)
	s, _ := benchStore(b, n)
	recs := coretest.Corpus(n, "bench", 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := recs[rand.IntN(n)]
		answer := r.Answer
		if i++; i%2 == 0 {
			answer += " edited"
		}
		if _, err := s.Patch(b.Context(), core.PatchRequest{ProjectID: "bench", QAID: r.QAID, Answer: &answer}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCandidateEvents measures candidates as the service sends them,
// each with its event id: new QAs, duplicates that fold into a QA with
// their evidence, and a repeated event (the stored result answers).
func BenchmarkCandidateEvents(b *testing.B) {
	for _, kind := range []string{"new", "duplicate", "repeated"} {
		b.Run(kind, func(b *testing.B) {
			s := newShared(b)
			ctx := core.WithPrincipal(b.Context(), core.Principal{ID: "bench"})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := core.CandidateRequest{ProjectID: "bench", EventID: fmt.Sprintf("ev-%d", i),
					Question: fmt.Sprintf("%s %s question %d", coretest.Word(i), coretest.Word(i*7+1), i),
					Answer:   fmt.Sprintf("%s answer %d", coretest.Word(i*3+5), i)}
				switch kind {
				case "duplicate":
					req.Question, req.Answer = "how to fold a benchmark candidate", "fold it"
					req.Evidence = &core.Evidence{Result: "pass", Strength: "weak"}
					req.RunID = fmt.Sprintf("run-%d", i%50)
				case "repeated":
					req.EventID, req.Question, req.Answer = "ev-repeated", "how to repeat a benchmark candidate", "repeat it"
				}
				if _, err := s.RecordCandidate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
