package semantic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// fakeStore answers Search with fixed lexical matches and records requests.
type fakeStore struct {
	ms   []core.Match
	err  error
	reqs []core.SearchRequest
}

func (s *fakeStore) Search(_ context.Context, req core.SearchRequest) ([]core.Match, error) {
	s.reqs = append(s.reqs, req)
	if s.err != nil {
		return nil, s.err
	}
	var out []core.Match
	for _, m := range s.ms {
		if m.Relevance >= req.MinScore {
			out = append(out, m)
		}
	}
	return core.Rank(out, 0, req.Limit, false), nil
}

func gitMatches() []core.Match {
	var ms []core.Match
	for _, c := range gitCands() {
		ms = append(ms, core.Match{QAID: c.ID, ProjectID: "p", Question: c.Text, Answer: "", Relevance: c.Lexical, Trust: 0.5, Status: core.StatusVerified})
	}
	return ms
}

func qaids(ms []core.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.QAID
	}
	return out
}

func TestHybridOff(t *testing.T) {
	h, err := NewHybrid(nil, HybridConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{ms: gitMatches()}
	req := core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 2, MinScore: 0.4}
	got, err := h.Search(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.reqs) != 1 || st.reqs[0] != req {
		t.Fatalf("store got %+v, want the request unchanged", st.reqs)
	}
	if !slices.Equal(qaids(got), []string{"naming", "rebase"}) {
		t.Fatalf("got %v", qaids(got))
	}
}

func TestHybridSearch(t *testing.T) {
	e := &fakeEmbedder{dims: fakeDims}
	h, err := NewHybrid(e, HybridConfig{Weight: 0.5, Candidates: 20})
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{ms: gitMatches()}
	req := core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 2, MinScore: 0.3, Explain: true}
	got, err := h.Search(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	if w := st.reqs[0]; w.Limit != 20 || w.MinScore != 0 || w.Query != gitQuery || w.ProjectID != "p" {
		t.Fatalf("store asked %+v, want limit 20, min 0", w)
	}
	if !slices.Equal(qaids(got), []string{"delete", "naming"}) {
		t.Fatalf("got %v, want the paraphrase first and the limit applied", qaids(got))
	}
	if got[0].Relevance <= 0.38 || got[0].Explain == nil || got[0].Explain.Relevance != got[0].Relevance {
		t.Fatalf("relevance not fused or not ranked: %+v", got[0])
	}
	// Second search: query and QA vectors come from the caches.
	if _, err := h.Search(t.Context(), st, req); err != nil {
		t.Fatal(err)
	}
	if e.calls.Load() != 1 {
		t.Fatalf("embedder calls = %d, want 1", e.calls.Load())
	}
	// An edited answer changes the text hash: that QA alone is embedded again.
	st.ms[2].Answer = "also: git branch -D forces it"
	if _, err := h.Search(t.Context(), st, req); err != nil {
		t.Fatal(err)
	}
	if last := e.texts[len(e.texts)-1]; len(last) != 1 || last[0] != st.ms[2].Question+"\n"+st.ms[2].Answer {
		t.Fatalf("re-embedded %q, want only the edited QA", last)
	}
}

func TestHybridMinScoreOnFused(t *testing.T) {
	// "delete" is lexically under min_score 0.4 but its fused relevance is
	// above: it must be asked for (MinScore 0) and kept.
	h, _ := NewHybrid(&fakeEmbedder{dims: fakeDims}, HybridConfig{Weight: 0.5})
	st := &fakeStore{ms: gitMatches()}
	got, err := h.Search(t.Context(), st, core.SearchRequest{ProjectID: "p", Query: gitQuery, MinScore: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(qaids(got), "delete") || slices.Contains(qaids(got), "docker") {
		t.Fatalf("got %v", qaids(got))
	}
	if st.reqs[0].Limit != DefaultCandidates {
		t.Fatalf("limit asked %d", st.reqs[0].Limit)
	}
}

func TestHybridFailsOpen(t *testing.T) {
	boom := fmt.Errorf("down: %w", core.ErrUnavailable)
	h, _ := NewHybrid(&fakeEmbedder{dims: fakeDims, err: boom}, HybridConfig{Weight: 0.5})
	st := &fakeStore{ms: gitMatches()}
	got, err := h.Search(t.Context(), st, core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 3, MinScore: 0.4})
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(qaids(got), []string{"naming", "rebase"}) {
		t.Fatalf("fallback %v, want the lexical matches above min_score", qaids(got))
	}
	st.err = fmt.Errorf("store: %w", core.ErrUnavailable)
	if got, err := h.Search(t.Context(), st, core.SearchRequest{Query: "x"}); got != nil || !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("store error: %v, %v", got, err)
	}
}

// slowEmbedder blocks until its context ends.
type slowEmbedder struct{ fakeEmbedder }

func (s *slowEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("slow: %w: %w", core.ErrUnavailable, ctx.Err())
}

func TestHybridTimeoutFallsBack(t *testing.T) {
	h, _ := NewHybrid(&slowEmbedder{fakeEmbedder{dims: fakeDims}}, HybridConfig{Weight: 0.5, Timeout: 30 * time.Millisecond})
	start := time.Now()
	got, err := Wrap(pluginStub{fakeStore: &fakeStore{ms: gitMatches()}}, h).Search(t.Context(), core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 2})
	if err != nil || !slices.Equal(qaids(got), []string{"naming", "rebase"}) {
		t.Fatalf("got %v, %v; want the lexical order", qaids(got), err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("took %v; the timeout did not bound the embedder", el)
	}
}

func TestNewHybridConfig(t *testing.T) {
	e := &fakeEmbedder{dims: 2}
	for _, tt := range []struct {
		name  string
		e     Embedder
		cfg   HybridConfig
		field string
	}{
		{name: "weight high", e: e, cfg: HybridConfig{Weight: 2}, field: "weight"},
		{name: "weight negative", e: e, cfg: HybridConfig{Weight: -1}, field: "weight"},
		{name: "fusion", e: e, cfg: HybridConfig{Weight: 0.3, Fusion: 7}, field: "fusion"},
		{name: "candidates", e: e, cfg: HybridConfig{Weight: 0.3, Candidates: 51}, field: "candidates"},
		{name: "negative timeout", e: e, cfg: HybridConfig{Weight: 0.3, Timeout: -1}, field: "timeout"},
		{name: "no embedder", cfg: HybridConfig{Weight: 0.3}, field: "embedder"},
		{name: "ok", e: e, cfg: HybridConfig{Weight: 0.3, Fusion: FusionRRF}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHybrid(tt.e, tt.cfg)
			var fe *core.FieldError
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want field %s", err, tt.field)
			}
		})
	}
}

// memVectors is an in-memory VectorStore.
type memVectors struct {
	m       map[string][]byte
	getErr  error
	gets    int
	putKeys []string
}

func (v *memVectors) GetVectors(_ context.Context, model string, keys []string) (map[string][]byte, error) {
	v.gets++
	if v.getErr != nil {
		return nil, v.getErr
	}
	out := map[string][]byte{}
	for _, k := range keys {
		if b, ok := v.m[model+"|"+k]; ok {
			out[k] = b
		}
	}
	return out, nil
}

func (v *memVectors) PutVectors(_ context.Context, model string, vecs map[string][]byte) error {
	for k, b := range vecs {
		v.m[model+"|"+k] = b
		v.putKeys = append(v.putKeys, k)
	}
	return nil
}

func TestHybridVectorStore(t *testing.T) {
	vs := &memVectors{m: map[string][]byte{}}
	st := &fakeStore{ms: gitMatches()}
	req := core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 3}

	e1 := &fakeEmbedder{dims: fakeDims}
	h1, _ := NewHybrid(e1, HybridConfig{Weight: 0.5}, WithVectorStore(vs))
	first, err := h1.Search(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.putKeys) != len(st.ms) {
		t.Fatalf("stored %d vectors, want %d", len(vs.putKeys), len(st.ms))
	}
	// A new process: empty LRU caches, same vector store.
	e2 := &fakeEmbedder{dims: fakeDims}
	h2, _ := NewHybrid(e2, HybridConfig{Weight: 0.5}, WithVectorStore(vs))
	second, err := h2.Search(t.Context(), st, req)
	if err != nil {
		t.Fatal(err)
	}
	if e2.calls.Load() != 1 || len(e2.texts[0]) != 1 || e2.texts[0][0] != gitQuery {
		t.Fatalf("second process embedded %q, want only the query", e2.texts)
	}
	if !slices.Equal(qaids(first), qaids(second)) {
		t.Fatalf("orders differ: %v vs %v", qaids(first), qaids(second))
	}
	if len(vs.putKeys) != len(st.ms) {
		t.Fatalf("vectors read from the store were written again: %v", vs.putKeys)
	}
	// A failing vector store is a miss, not a failure.
	bad := &memVectors{m: map[string][]byte{}, getErr: errors.New("disk on fire")}
	e3 := &fakeEmbedder{dims: fakeDims}
	h3, _ := NewHybrid(e3, HybridConfig{Weight: 0.5}, WithVectorStore(bad))
	third, err := h3.Search(t.Context(), st, req)
	if err != nil || !slices.Equal(qaids(third), qaids(first)) || len(e3.texts[0]) != 1+len(st.ms) {
		t.Fatalf("with a failing vector store: %v, %v, embedded %d texts", qaids(third), err, len(e3.texts[0]))
	}
}

// pluginStub is a core.MemoryPlugin whose Search is a fakeStore's.
type pluginStub struct {
	core.MemoryPlugin
	*fakeStore
}

func (p pluginStub) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	return p.fakeStore.Search(ctx, req)
}
func (p pluginStub) Name() string { return "stub" }

func TestStoreWrap(t *testing.T) {
	base := pluginStub{fakeStore: &fakeStore{ms: gitMatches()}}
	off, _ := NewHybrid(nil, HybridConfig{})
	if Wrap(base, off) != core.MemoryPlugin(base) || Wrap(base, nil) != core.MemoryPlugin(base) {
		t.Fatal("Wrap with semantic off must return the plugin itself")
	}
	req := core.SearchRequest{ProjectID: "p", Query: gitQuery, Limit: 1}

	on, _ := NewHybrid(&fakeEmbedder{dims: fakeDims}, HybridConfig{Weight: 0.5})
	s := Wrap(base, on)
	if got, err := s.Search(t.Context(), req); err != nil || qaids(got)[0] != "delete" {
		t.Fatalf("hybrid via Store: %v, %v", got, err)
	}
	if s.Name() != "stub" || s.(*Store).Unwrap() != core.MemoryPlugin(base) {
		t.Fatal("other methods must be the wrapped plugin's")
	}

	var logs strings.Builder
	down, _ := NewHybrid(&fakeEmbedder{dims: fakeDims, err: fmt.Errorf("x: %w", core.ErrUnavailable)},
		HybridConfig{Weight: 0.5}, WithHybridLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	got, err := Wrap(base, down).Search(t.Context(), req)
	if err != nil || !slices.Equal(qaids(got), []string{"naming"}) {
		t.Fatalf("fail open: %v, %v; want the lexical top match and no error", qaids(got), err)
	}
	if !strings.Contains(logs.String(), "semantic rerank failed") || strings.Contains(logs.String(), "erase") {
		t.Fatalf("log = %q: want a warning without the query", logs.String())
	}
	base.fakeStore.err = fmt.Errorf("store: %w", core.ErrUnavailable)
	if _, err := Wrap(base, down).Search(t.Context(), req); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("store error lost: %v", err)
	}
}
