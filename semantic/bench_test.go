package semantic

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

const benchDims = 384

// tableEmbedder answers from precomputed vectors: it costs a map lookup, so
// benchmarks measure Rerank, not a model.
type tableEmbedder map[string][]float32

func (t tableEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = t[s]
	}
	return out, nil
}
func (t tableEmbedder) Dimensions() int { return benchDims }
func (t tableEmbedder) Name() string    { return "table" }

func benchSetup(n int) (tableEmbedder, []Candidate) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, benchDims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return Normalize(v)
	}
	e := tableEmbedder{"the query": vec()}
	cs := make([]Candidate, n)
	for i := range cs {
		text := fmt.Sprintf("candidate %d", i)
		e[text] = vec()
		cs[i] = Candidate{ID: fmt.Sprintf("qa-%03d", i), Text: text, Lexical: r.Float64()}
	}
	return e, cs
}

// BenchmarkRerank: 50 candidates at 384 dimensions.
//   - cached: query in the LRU, every candidate carries its vector (the
//     steady state with per-QA vectors): fusion cost only.
//   - embed: nothing cached; one Embed call of 51 texts to an in-process
//     table (the model's own time excluded).
//   - http: nothing cached; through the OpenAI client to an httptest fake
//     (JSON encode/decode of 51×384 floats on loopback).
func BenchmarkRerank(b *testing.B) {
	e, cs := benchSetup(50)
	cached := make([]Candidate, len(cs))
	for i, c := range cs {
		c.Vector = e[c.Text]
		cached[i] = c
	}
	for _, f := range []Fusion{FusionLinear, FusionRRF} {
		b.Run(f.String()+"/cached", func(b *testing.B) {
			cache := NewCache(0)
			cache.Put(e.Name(), "the query", e["the query"])
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Rerank(b.Context(), e, "the query", cached, 0.3, WithFusion(f), WithQueryCache(cache)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.String()+"/embed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Rerank(b.Context(), e, "the query", cs, 0.3, WithFusion(f)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("linear/http", func(b *testing.B) {
		fs := newFakeServer(b)
		fs.dims = benchDims
		c, _ := newClient(b, fs, Config{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Rerank(b.Context(), c, "the query", cs, 0.3); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Rerank(b.Context(), e, "the query", cs, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCosine384(b *testing.B) {
	e, _ := benchSetup(1)
	x, y := e["the query"], e["candidate 0"]
	b.ReportAllocs()
	for b.Loop() {
		_ = Cosine(x, y)
	}
}
