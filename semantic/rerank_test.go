package semantic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

// gitCands: a lexical search for "how do I erase a git branch" would rank
// "branch naming" above the real answer, which says "delete" instead of
// "erase".
func gitCands() []Candidate {
	return []Candidate{
		{ID: "naming", Text: "git branch naming rules: use feature/ prefixes for every branch", Lexical: 0.55},
		{ID: "rebase", Text: "git rebase a branch onto main", Lexical: 0.42},
		{ID: "delete", Text: "remove a local branch: git branch -d name; remote: git push origin --delete name", Lexical: 0.38},
		{ID: "docker", Text: "docker build cache is slow", Lexical: 0.05},
	}
}

const gitQuery = "how do I erase a git branch"

func ids(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestRerankOffKeepsLexicalOrder(t *testing.T) {
	for _, f := range []Fusion{FusionLinear, FusionRRF} {
		t.Run(f.String(), func(t *testing.T) {
			e := &fakeEmbedder{dims: fakeDims}
			in := gitCands()
			slices.Reverse(in) // any given order is kept as is
			got, err := Rerank(t.Context(), e, gitQuery, in, 0, WithFusion(f))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), ids(in)) {
				t.Fatalf("order %v, want %v", ids(got), ids(in))
			}
			for i := range got {
				if got[i].Score != in[i].Lexical || got[i].Semantic != 0 {
					t.Fatalf("%s: score %v semantic %v, want %v, 0", got[i].ID, got[i].Score, got[i].Semantic, in[i].Lexical)
				}
			}
			if n := e.calls.Load(); n != 0 {
				t.Fatalf("embedder called %d times with w=0", n)
			}
		})
	}
}

func TestRerankParaphraseMovesUp(t *testing.T) {
	// Lexically "delete" is third; the fake model puts it first
	// (semantic ≈ 0.76 vs ≈ 0.52).
	for _, tt := range []struct {
		name    string
		w       float64
		fusion  Fusion
		wantPos int // of "delete"
	}{
		{name: "linear 0.3", w: 0.3, fusion: FusionLinear, wantPos: 1},
		{name: "linear 0.5", w: 0.5, fusion: FusionLinear, wantPos: 0},
		{name: "linear 1", w: 1, fusion: FusionLinear, wantPos: 0},
		{name: "rrf 0.5", w: 0.5, fusion: FusionRRF, wantPos: 1},
		{name: "rrf 0.7", w: 0.7, fusion: FusionRRF, wantPos: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &fakeEmbedder{dims: fakeDims}
			in := gitCands()
			got, err := Rerank(t.Context(), e, gitQuery, in, tt.w, WithFusion(tt.fusion))
			if err != nil {
				t.Fatal(err)
			}
			if pos := slices.Index(ids(got), "delete"); pos != tt.wantPos {
				t.Fatalf("order %v: the paraphrase is at %d, want %d", ids(got), pos, tt.wantPos)
			}
			for i, c := range got {
				if c.Score < 0 || c.Score > 1 || c.Semantic < 0 || c.Semantic > 1 {
					t.Fatalf("%s: score %v semantic %v out of [0,1]", c.ID, c.Score, c.Semantic)
				}
				if i > 0 && got[i-1].Score < c.Score {
					t.Fatalf("not sorted by score: %v", got)
				}
				if len(c.Vector) != fakeDims {
					t.Fatalf("%s: vector not filled in for caching", c.ID)
				}
			}
			if tt.fusion == FusionLinear {
				d := got[tt.wantPos]
				want := (1-tt.w)*d.Lexical + tt.w*d.Semantic
				if math.Abs(d.Score-want) > 1e-12 {
					t.Fatalf("linear score %v, want %v", d.Score, want)
				}
			}
			// the input is untouched
			if !slices.Equal(ids(in), ids(gitCands())) || in[0].Vector != nil || in[0].Score != 0 {
				t.Fatal("Rerank modified its input")
			}
			// one Embed call: query first, then the candidates
			if e.calls.Load() != 1 || e.texts[0][0] != gitQuery || len(e.texts[0]) != 1+len(in) {
				t.Fatalf("embed calls %d texts %q", e.calls.Load(), e.texts)
			}
		})
	}
}

func TestRerankRRFFormula(t *testing.T) {
	// Semantic order is fixed by hand through cached vectors:
	// q = (1,0); a is orthogonal, b is identical, c is 45°.
	e := &fakeEmbedder{dims: 2}
	cache := NewCache(4)
	cache.Put("fake", "q", []float32{1, 0})
	in := []Candidate{
		{ID: "a", Vector: []float32{0, 1}, Lexical: 0.9},
		{ID: "b", Vector: []float32{1, 0}, Lexical: 0.1},
		{ID: "c", Vector: []float32{1, 1}, Lexical: 0.5},
	}
	const w, k = 0.5, 60.0
	got, err := Rerank(t.Context(), e, "q", in, w, WithFusion(FusionRRF), WithQueryCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	// lexical ranks a1 c2 b3; semantic ranks b1 c2 a3.
	want := map[string]float64{
		"a": (k + 1) * ((1-w)/(k+1) + w/(k+3)),
		"b": (k + 1) * ((1-w)/(k+3) + w/(k+1)),
		"c": (k + 1) * ((1-w)/(k+2) + w/(k+2)),
	}
	for _, c := range got {
		if math.Abs(c.Score-want[c.ID]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", c.ID, c.Score, want[c.ID])
		}
	}
	// a and b tie exactly; ID breaks it.
	if !slices.Equal(ids(got), []string{"a", "b", "c"}) {
		t.Errorf("order %v, want [a b c]", ids(got))
	}
	if e.calls.Load() != 0 {
		t.Errorf("embedder called although the query was cached and all vectors given")
	}
	got, _ = Rerank(t.Context(), e, "q", in, w, WithFusion(FusionRRF), WithQueryCache(cache), WithRRFK(1))
	if want := 2 * ((1-w)/2 + w/4); math.Abs(got[0].Score-want) > 1e-12 {
		t.Errorf("k=1 not applied: %v", got)
	}
}

func TestRerankNegativeSimilarityIsZero(t *testing.T) {
	cache := NewCache(1)
	cache.Put("fake", "q", []float32{1, 0})
	in := []Candidate{
		{ID: "opposite", Vector: []float32{-1, 0}, Lexical: 0.4},
		{ID: "orthogonal", Vector: []float32{0, 1}, Lexical: 0.4},
	}
	got, err := Rerank(t.Context(), &fakeEmbedder{dims: 2}, "q", in, 0.5, WithQueryCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Semantic != 0 || c.Score != 0.2 {
			t.Fatalf("%s: semantic %v score %v, want 0 and 0.2 (negative cosine maps to 0)", c.ID, c.Semantic, c.Score)
		}
	}
	if !slices.Equal(ids(got), []string{"opposite", "orthogonal"}) {
		t.Fatalf("order %v", ids(got))
	}
}

func TestRerankTiesByID(t *testing.T) {
	e := &fakeEmbedder{dims: fakeDims}
	in := []Candidate{
		{ID: "z", Text: "same words here", Lexical: 0.4},
		{ID: "a", Text: "same words here", Lexical: 0.4},
		{ID: "m", Text: "same words here", Lexical: 0.4},
	}
	got, err := Rerank(t.Context(), e, "same words", in, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []string{"a", "m", "z"}) {
		t.Fatalf("order %v, want ties by ID", ids(got))
	}
}

func TestRerankVectorsAndCache(t *testing.T) {
	e := &fakeEmbedder{dims: fakeDims}
	cache := NewCache(8)
	first, err := Rerank(t.Context(), e, gitQuery, gitCands(), 0.3, WithQueryCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	// Second search: same query (cache hit), vectors kept from the first.
	again, err := Rerank(t.Context(), e, gitQuery, first, 0.3, WithQueryCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	if e.calls.Load() != 1 {
		t.Fatalf("embedder calls = %d, want 1 (query cached, vectors reused)", e.calls.Load())
	}
	if hits, _ := cache.Stats(); hits != 1 {
		t.Fatalf("cache hits = %d, want 1", hits)
	}
	if !slices.Equal(ids(first), ids(again)) {
		t.Fatalf("orders differ: %v vs %v", ids(first), ids(again))
	}
	// A stale vector (other length) and a candidate without one are embedded;
	// a candidate with no text and no vector gets semantic 0.
	mixed := []Candidate{
		{ID: "stale", Text: "git branch delete", Vector: []float32{1, 2, 3}, Lexical: 0.1},
		{ID: "fresh", Text: "docker image", Lexical: 0.2},
		{ID: "kept", Text: "ignored", Vector: fakeEmbed("git branch", fakeDims), Lexical: 0.3},
		{ID: "empty", Lexical: 0.9},
	}
	got, err := Rerank(t.Context(), e, gitQuery, mixed, 0.5, WithQueryCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	last := e.texts[len(e.texts)-1]
	if !slices.Equal(last, []string{"git branch delete", "docker image"}) {
		t.Fatalf("embedded %q, want only the stale and the fresh candidate", last)
	}
	for _, c := range got {
		if c.ID == "empty" && (c.Semantic != 0 || c.Score != 0.45) {
			t.Fatalf("empty candidate: %+v", c)
		}
		if c.ID == "stale" && len(c.Vector) != fakeDims {
			t.Fatalf("stale vector not replaced")
		}
	}
}

func TestRerankErrors(t *testing.T) {
	boom := fmt.Errorf("model down: %w", core.ErrUnavailable)
	t.Run("embedder error keeps lexical order", func(t *testing.T) {
		e := &fakeEmbedder{dims: fakeDims, err: boom}
		in := gitCands()
		got, err := Rerank(t.Context(), e, gitQuery, in, 0.5)
		if !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if !slices.Equal(ids(got), ids(in)) {
			t.Fatalf("order %v, want the lexical %v", ids(got), ids(in))
		}
		for i := range got {
			if got[i].Score != in[i].Lexical {
				t.Fatalf("score %v, want lexical %v", got[i].Score, in[i].Lexical)
			}
		}
	})
	for _, w := range []float64{-0.1, 1.1, math.NaN()} {
		t.Run(fmt.Sprintf("weight %v", w), func(t *testing.T) {
			e := &fakeEmbedder{dims: fakeDims}
			_, err := Rerank(t.Context(), e, gitQuery, gitCands(), w)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "weight") {
				t.Fatalf("err = %v, want ErrInvalid on weight", err)
			}
			if e.calls.Load() != 0 {
				t.Fatal("embedder called")
			}
		})
	}
	t.Run("cached vector of another dimension", func(t *testing.T) {
		e := &fakeEmbedder{dims: 0} // unknown dimensions: cached vectors are trusted
		in := []Candidate{{ID: "x", Vector: []float32{1, 2}, Lexical: 0.2}}
		got, err := Rerank(t.Context(), e, gitQuery, in, 0.5)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `"x"`) {
			t.Fatalf("err = %v, want ErrInvalid naming x", err)
		}
		if got[0].Score != 0.2 {
			t.Fatalf("score %v, want lexical", got[0].Score)
		}
	})
	t.Run("unknown fusion", func(t *testing.T) {
		if _, err := Rerank(t.Context(), &fakeEmbedder{dims: 2}, "q", gitCands(), 0.5, WithFusion(Fusion(9))); !errors.Is(err, core.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParseFusion(t *testing.T) {
	for in, want := range map[string]Fusion{"": FusionLinear, "linear": FusionLinear, "RRF": FusionRRF} {
		if got, err := ParseFusion(in); err != nil || got != want {
			t.Errorf("ParseFusion(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFusion("max"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("ParseFusion(max) err = %v", err)
	}
}
