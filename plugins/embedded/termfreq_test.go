package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/retrieval"
)

// countingSource wraps the store's source, counting the postings read, and
// hides its TermFreqReader capability unless withTF.
type countingSource struct {
	src      source
	postings *int
}

func (c countingSource) Stats(ctx context.Context) (retrieval.Stats, error) {
	return c.src.Stats(ctx)
}

func (c countingSource) DocFreq(ctx context.Context, term string) (int64, error) {
	return c.src.DocFreq(ctx, term)
}

func (c countingSource) Postings(ctx context.Context, term string, fn func(retrieval.Posting) bool) error {
	return c.src.Postings(ctx, term, func(p retrieval.Posting) bool {
		*c.postings++
		return fn(p)
	})
}

// countingTFSource is a countingSource with TermFreqs.
type countingTFSource struct{ countingSource }

func (c countingTFSource) TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(uint64, []retrieval.TF, [retrieval.NumFields]uint32)) error {
	return c.src.TermFreqs(ctx, docs, terms, fn)
}

// termFreqStore builds a store whose project "a" sees its own QAs, global
// ones and QAs another project shares with it, so that TermFreqs must find
// each document in its own scope.
func termFreqStore(t *testing.T) (*Store, []string) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	own := coretest.Corpus(300, "a", 1)
	global := coretest.Corpus(150, core.GlobalProject, 2)
	shared := coretest.Corpus(150, "b", 3)
	for i := range shared {
		shared[i].SharedProjects = []string{"a"}
	}
	other := coretest.Corpus(100, "c", 4) // not visible to a; c shares nothing
	for _, recs := range [][]core.Record{own, global, shared, other} {
		if err := s.Import(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
	}
	var queries []string
	for _, recs := range [][]core.Record{own, global, shared} {
		queries = append(queries, coretest.Queries(recs, 10)...)
	}
	// Longer queries: more deferred common terms.
	for i := range 10 {
		queries = append(queries, own[i].Question+" "+shared[i].Question)
	}
	return s, queries
}

// TestTermFreqsSameResults checks that the store's TermFreqReader gives the
// same hits, bit for bit, as reading the deferred terms' postings in every
// visible scope (empty ones included), and that it reads fewer postings when
// the budget defers terms.
func TestTermFreqsSameResults(t *testing.T) {
	s, queries := termFreqStore(t)
	exact := retrieval.DefaultParams() // budget larger than the corpus
	budget := retrieval.DefaultParams()
	budget.PostingBudget = 40
	budget.RescoreDepth = 30
	tests := []struct {
		name      string
		project   string // a sees three scopes; c's shared scope is empty
		params    retrieval.Params
		wantFewer bool // TermFreqs must read fewer postings in total
	}{
		{"within budget", "a", exact, false},
		{"budget defers common terms", "a", budget, true},
		{"empty shared scope within budget", "c", exact, false},
		{"empty shared scope, budget defers", "c", budget, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := retrieval.NewScorer(s.analyzer, tc.params)
			var withTF, without int
			err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
				src := newSource(tx, visibleScopes(tc.project))
				all := source{tx: tx, scopes: visibleScopes(tc.project)}
				for _, q := range queries {
					a, err := sc.Search(t.Context(), countingTFSource{countingSource{src, &withTF}}, q, 20)
					if err != nil {
						return err
					}
					b, err := sc.Search(t.Context(), countingSource{all, &without}, q, 20)
					if err != nil {
						return err
					}
					if d := cmp.Diff(b, a); d != "" {
						return fmt.Errorf("query %q: hits differ (-postings +termfreqs):\n%s", q, d)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("postings read: %d with TermFreqs, %d without", withTF, without)
			if without == 0 {
				t.Fatal("no postings read: the queries match nothing")
			}
			if tc.wantFewer && withTF >= without {
				t.Errorf("with TermFreqs %d postings read, want fewer than %d", withTF, without)
			}
			if !tc.wantFewer && withTF != without {
				t.Errorf("within the budget: %d postings read with TermFreqs, %d without; want equal", withTF, without)
			}
		})
	}
}

// TestTermFreqs checks TermFreqs against the postings for every scope a
// document can be in, absent terms and documents, and a NUL in a term.
func TestTermFreqs(t *testing.T) {
	s, queries := termFreqStore(t)
	err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
		src := newSource(tx, visibleScopes("a"))
		terms := s.analyzer.Terms(queries[0] + " " + queries[15] + " " + queries[25])
		terms = append(terms, "zzznotaterm", "bad\x00term")
		type entry struct {
			TFs  []retrieval.TF
			Lens [retrieval.NumFields]uint32
		}
		want := map[uint64]*entry{}
		get := func(doc uint64) *entry {
			if want[doc] == nil {
				want[doc] = &entry{TFs: make([]retrieval.TF, len(terms))}
			}
			return want[doc]
		}
		for j, term := range terms {
			if err := src.Postings(t.Context(), term, func(p retrieval.Posting) bool {
				e := get(p.Doc)
				e.TFs[j], e.Lens = p.TF, p.Len
				return true
			}); err != nil {
				return err
			}
		}
		docs := make([]uint64, 0, len(want)+1)
		for d := range want {
			docs = append(docs, d)
		}
		const absentDoc = 1 << 40 // not in the store: not reported
		docs = append(docs, absentDoc)
		if len(docs) < 20 {
			return fmt.Errorf("only %d documents hold the test terms", len(docs))
		}
		got := map[uint64]*entry{}
		if err := src.TermFreqs(t.Context(), docs, terms, func(doc uint64, tfs []retrieval.TF, lens [retrieval.NumFields]uint32) {
			if got[doc] != nil {
				t.Errorf("doc %d reported twice", doc)
			}
			got[doc] = &entry{TFs: append([]retrieval.TF(nil), tfs...), Lens: lens}
		}); err != nil {
			return err
		}
		if d := cmp.Diff(want, got); d != "" {
			return fmt.Errorf("TermFreqs differ from postings (-postings +termfreqs):\n%s", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("empty scopes left out", func(t *testing.T) {
		err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
			got := newSource(tx, visibleScopes("c")).scopes
			if want := []string{ownScope("c"), ownScope(core.GlobalProject)}; !slices.Equal(got, want) {
				t.Errorf("scopes of c = %q, want %q", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
			src := newSource(tx, visibleScopes("a"))
			return src.TermFreqs(ctx, []uint64{1, 2}, []string{"x"}, func(uint64, []retrieval.TF, [retrieval.NumFields]uint32) {
				t.Error("fn called after cancellation")
			})
		})
		if err == nil {
			t.Fatal("TermFreqs with a cancelled context succeeded")
		}
	})
}
