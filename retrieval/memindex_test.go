package retrieval

import (
	"context"
	"slices"
	"sync"
	"testing"
)

func postingsOf(tb testing.TB, src Source, term string) []uint64 {
	tb.Helper()
	var out []uint64
	if err := src.Postings(context.Background(), term, func(p Posting) bool { out = append(out, p.Doc); return true }); err != nil {
		tb.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestMemIndex(t *testing.T) {
	ctx := context.Background()
	a := NewAnalyzer()
	m := NewMemIndex(a)
	m.Add(1, "install nginx", "apt install nginx")
	m.Add(2, "nginx 502", "upstream down")
	m.Add(3, "python import error", "pip install")

	t.Run("stats", func(t *testing.T) {
		st, _ := m.Stats(ctx)
		want := Stats{Docs: 3, TotalLen: [NumFields]int64{2 + 2 + 3, 3 + 2 + 2}}
		if st != want || m.Len() != 3 {
			t.Errorf("Stats = %+v, Len = %d; want %+v, 3", st, m.Len(), want)
		}
	})
	t.Run("postings and df", func(t *testing.T) {
		if got := postingsOf(t, m, "nginx"); !slices.Equal(got, []uint64{1, 2}) {
			t.Errorf("postings(nginx) = %v", got)
		}
		if df, _ := m.DocFreq(ctx, "instal"); df != 2 {
			t.Errorf("df(instal) = %d, want 2", df)
		}
		if df, _ := m.DocFreq(ctx, "missing"); df != 0 {
			t.Errorf("df(missing) = %d, want 0", df)
		}
	})
	t.Run("postings stop early", func(t *testing.T) {
		n := 0
		_ = m.Postings(ctx, "nginx", func(Posting) bool { n++; return false })
		if n != 1 {
			t.Errorf("callback ran %d times after returning false, want 1", n)
		}
	})
	t.Run("term freqs", func(t *testing.T) {
		got := map[uint64][]TF{}
		err := m.TermFreqs(ctx, []uint64{1, 3, 99}, []string{"nginx", "missing", "instal"}, func(doc uint64, tfs []TF, lens [NumFields]uint32) {
			got[doc] = slices.Clone(tfs)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint64][]TF{1: {{1, 1}, {}, {1, 1}}, 3: {{}, {}, {0, 1}}}
		if len(got) != 2 || !slices.Equal(got[1], want[1]) || !slices.Equal(got[3], want[3]) {
			t.Errorf("TermFreqs = %v, want %v", got, want)
		}
	})
	t.Run("replace", func(t *testing.T) {
		m.Add(2, "redis timeout", "raise the timeout")
		if got := postingsOf(t, m, "nginx"); !slices.Equal(got, []uint64{1}) {
			t.Errorf("postings(nginx) after replace = %v, want [1]", got)
		}
		if m.Len() != 3 {
			t.Errorf("Len = %d after replace, want 3", m.Len())
		}
	})
	t.Run("remove", func(t *testing.T) {
		if !m.Remove(1) || m.Remove(1) {
			t.Error("Remove(1) twice: want true then false")
		}
		if got := postingsOf(t, m, "nginx"); len(got) != 0 {
			t.Errorf("postings(nginx) after remove = %v", got)
		}
		st, _ := m.Stats(ctx)
		if st.Docs != 2 || st.TotalLen != [NumFields]int64{2 + 3, 2 + 2} {
			t.Errorf("Stats after remove = %+v", st)
		}
	})
}

func TestMemIndexConcurrentReads(t *testing.T) {
	idx, queries := randomCorpus(t, 300, 4)
	s := NewScorer(NewAnalyzer(), DefaultParams())
	// The writer below touches only its own terms, so each search sees the
	// collection either with or without its document.
	const wdoc = 10000
	want := make([][]Hit, len(queries))
	wantWith := make([][]Hit, len(queries))
	idx.Add(wdoc, "zzwriter only", "zzwriter")
	for i, q := range queries {
		wantWith[i] = search(t, s, idx, q, 5)
	}
	idx.Remove(wdoc)
	for i, q := range queries {
		want[i] = search(t, s, idx, q, 5)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i, q := range queries {
				if got := search(t, s, idx, q, 5); !slices.Equal(got, want[i]) && !slices.Equal(got, wantWith[i]) {
					t.Errorf("worker %d %q: %v, want %v", w, q, got, want[i])
					return
				}
			}
		})
	}
	// A writer on unrelated documents runs at the same time.
	wg.Go(func() {
		for range 200 {
			idx.Add(wdoc, "zzwriter only", "zzwriter")
			idx.Remove(wdoc)
		}
	})
	wg.Wait()
}

// TestMemIndexDocIDs indexes documents whose ids are small (kept in the
// slice of docTable) and far apart (kept in its map), and checks that
// both kinds answer TermFreqs, replace and remove alike.
func TestMemIndexDocIDs(t *testing.T) {
	ctx := context.Background()
	m := NewMemIndex(NewAnalyzer())
	docs := []uint64{0, 7, 1 << 40, 5000, 1<<64 - 1}
	for _, d := range docs {
		m.Add(d, "nginx upstream", "timeout")
	}
	if m.Len() != len(docs) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(docs))
	}
	freqs := func() map[uint64]TF {
		got := map[uint64]TF{}
		ask := append([]uint64{3, 1 << 41}, docs...)
		if err := m.TermFreqs(ctx, ask, []string{"nginx", "timeout"}, func(doc uint64, tfs []TF, lens [NumFields]uint32) {
			if lens != [NumFields]uint32{2, 1} {
				t.Errorf("doc %d: lens %v, want [2 1]", doc, lens)
			}
			got[doc] = tfs[0]
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := freqs()
	for _, d := range docs {
		if got[d] != (TF{1, 0}) {
			t.Errorf("doc %d: tf(nginx) %v, want [1 0]", d, got[d])
		}
	}
	if len(got) != len(docs) {
		t.Errorf("TermFreqs answered %d documents, want %d: %v", len(got), len(docs), got)
	}
	for _, d := range []uint64{7, 1 << 40} {
		if !m.Remove(d) || m.Remove(d) {
			t.Errorf("Remove(%d) twice: want true then false", d)
		}
	}
	if got := freqs(); len(got) != len(docs)-2 || m.Len() != len(docs)-2 {
		t.Errorf("after removing two: TermFreqs %v, Len %d", got, m.Len())
	}
	if got := postingsOf(t, m, "nginx"); !slices.Equal(got, []uint64{0, 5000, 1<<64 - 1}) {
		t.Errorf("postings(nginx) = %v", got)
	}
	// Enough documents for the slice to cover 5000, which was put in the
	// map: it must still be found.
	for d := uint64(10); d < 4500; d++ {
		m.Add(d, "filler", "text")
	}
	if got := freqs(); len(got) != len(docs)-2 || got[5000] != (TF{1, 0}) {
		t.Errorf("after the slice grew: TermFreqs %v", got)
	}
	if !m.Remove(5000) || m.Remove(5000) {
		t.Error("Remove(5000) twice after the slice grew: want true then false")
	}
}
