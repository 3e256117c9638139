package coretest

import (
	"fmt"
	"testing"

	"github.com/memex-dev/memex/core"
)

// BenchCorpusSize is the number of QAs Bench loads before searching.
const BenchCorpusSize = 2000

// Bench runs the conformance benchmarks: search over BenchCorpusSize QAs,
// validation, hit and candidate recording.
func Bench(b *testing.B, newPlugin func(tb testing.TB) core.MemoryPlugin) {
	b.Run("Search", func(b *testing.B) {
		p := newPlugin(b)
		recs := Corpus(BenchCorpusSize, projA, 1)
		Load(b, p, recs)
		queries := Queries(recs, 64)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := p.Search(b.Context(), core.SearchRequest{ProjectID: projA, Query: queries[i%len(queries)], Limit: core.DefaultSearchLimit}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Validate", func(b *testing.B) {
		p := newPlugin(b)
		id := addQA(b, p, core.CandidateRequest{ProjectID: projA, Question: "benchmark question", Answer: "benchmark answer"})
		ctx := as(b, "bench")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: id, Result: "pass", SignalStrength: "weak"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Hit", func(b *testing.B) {
		p := newPlugin(b)
		id := addQA(b, p, core.CandidateRequest{ProjectID: projA, Question: "benchmark question", Answer: "benchmark answer"})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.RecordHit(b.Context(), core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true, Used: true}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Candidate", func(b *testing.B) {
		p := newPlugin(b)
		ctx := as(b, "bench")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			q := fmt.Sprintf("%s %s %s question %d", Word(i), Word(i*7+1), Word(i*13+2), i)
			a := fmt.Sprintf("%s answer %d %s", Word(i*3+5), i, Word(i*11+3))
			if _, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: q, Answer: a}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Load stores recs in p: with Import when p is a core.Importer (in batches
// of 1,000), else one candidate at a time.
func Load(tb testing.TB, p core.MemoryPlugin, recs []core.Record) {
	tb.Helper()
	if im, ok := core.As[core.Importer](p); ok {
		for i := 0; i < len(recs); i += 1000 {
			if err := im.Import(tb.Context(), recs[i:min(i+1000, len(recs))]); err != nil {
				tb.Fatalf("Import: %v", err)
			}
		}
		return
	}
	for _, r := range recs {
		if _, err := p.RecordCandidate(tb.Context(), core.CandidateRequest{ProjectID: r.ProjectID, QAID: r.QAID, Question: r.Question, Answer: r.Answer}); err != nil {
			tb.Fatalf("RecordCandidate: %v", err)
		}
	}
}

// Queries derives n search queries from recs: the first four words of
// every len(recs)/n-th question.
func Queries(recs []core.Record, n int) []string {
	out := make([]string, 0, n)
	step := max(1, len(recs)/n)
	for i := 0; i < len(recs) && len(out) < n; i += step {
		w := splitWords(recs[i].Question)
		out = append(out, joinWords(w[:min(4, len(w))]))
	}
	return out
}
