package retrieval_test

import (
	"context"
	"testing"

	"github.com/memex-dev/memex/evalset"
	"github.com/memex-dev/memex/retrieval"
)

// question200 is a typical 200-character agent question.
const question200 = "Why does `go test ./...` fail with ENOENT when parseConfig opens /etc/memex/config.toml " +
	"inside the Docker container, although the file exists on the host and HTTPServer starts fine?"

func BenchmarkAnalyzeQuestion(b *testing.B) {
	a := retrieval.NewAnalyzer()
	b.ReportAllocs()
	b.SetBytes(int64(len(question200)))
	for b.Loop() {
		a.Terms(question200)
	}
}

func BenchmarkAnalyzeQA(b *testing.B) {
	a := retrieval.NewAnalyzer()
	r := evalset.NewSynthetic(7).Record(1)
	b.ReportAllocs()
	for b.Loop() {
		a.Analyze(r.Question, r.Answer)
	}
}

// BenchmarkSearch times one search of a ~200-character question over a
// synthetic MemIndex of 100k QAs (Zipf vocabulary, ~10% Chinese). Building
// the index takes several seconds and is not timed.
func BenchmarkSearch(b *testing.B) {
	const docs = 100_000
	a := retrieval.NewAnalyzer()
	idx := retrieval.NewMemIndex(a)
	gen := evalset.NewSynthetic(1)
	for i := range docs {
		r := gen.Record(i)
		idx.Add(uint64(i), r.Question, r.Answer)
	}
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = gen.Query()
	}
	for _, bc := range []struct {
		name string
		p    func() retrieval.Params
		min  float64
	}{
		{"default", retrieval.DefaultParams, 0},
		{"exact", func() retrieval.Params { p := retrieval.DefaultParams(); p.PostingBudget = 0; return p }, 0},
		// What memex run and the service ask: min_score's default.
		{"min=0.2", retrieval.DefaultParams, 0.2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := retrieval.NewScorer(a, bc.p())
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.SearchMin(ctx, idx, queries[i%len(queries)], 10, bc.min); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
