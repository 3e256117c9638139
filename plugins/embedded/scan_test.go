package embedded

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/retrieval"
)

// blocksOnly is the store's source with its block scan but neither
// Postings nor TermFreqs: every list, deferred ones included, is read in
// blocks.
type blocksOnly struct{ src source }

func (b blocksOnly) Stats(ctx context.Context) (retrieval.Stats, error) { return b.src.Stats(ctx) }
func (b blocksOnly) DocFreq(ctx context.Context, term string) (int64, error) {
	return b.src.DocFreq(ctx, term)
}
func (b blocksOnly) Postings(context.Context, string, func(retrieval.Posting) bool) error {
	panic("Postings read although the source scans blocks")
}
func (b blocksOnly) ScanPostings(ctx context.Context, term string, fn func([]retrieval.Posting)) error {
	return b.src.ScanPostings(ctx, term, fn)
}

// TestScanPostingsSameResults: the blocks hold Postings' postings in the
// same order, and searches reading them score bit for bit as searches
// reading Postings one posting at a time, with and without TermFreqs.
func TestScanPostingsSameResults(t *testing.T) {
	s, queries := termFreqStore(t)
	budget := retrieval.DefaultParams()
	budget.PostingBudget, budget.RescoreDepth = 40, 30
	err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
		src := newSource(tx, visibleScopes("a"))
		long := false
		for _, q := range queries {
			for _, term := range s.analyzer.Terms(q) {
				var want, got []retrieval.Posting
				if err := src.Postings(t.Context(), term, func(p retrieval.Posting) bool { want = append(want, p); return true }); err != nil {
					return err
				}
				blocks := 0
				if err := src.ScanPostings(t.Context(), term, func(ps []retrieval.Posting) {
					blocks++
					got = append(got, ps...)
				}); err != nil {
					return err
				}
				if d := cmp.Diff(want, got); d != "" {
					return fmt.Errorf("%q: blocks differ (-Postings +ScanPostings):\n%s", term, d)
				}
				long = long || blocks > 1
			}
		}
		if !long {
			return errors.New("no list of several blocks")
		}
		for _, p := range []retrieval.Params{retrieval.DefaultParams(), budget} {
			sc := retrieval.NewScorer(s.analyzer, p)
			for _, q := range queries {
				n := 0
				want, err := sc.SearchMin(t.Context(), countingSource{src, &n}, q, 20, 0.1)
				if err != nil {
					return err
				}
				for _, s := range []retrieval.Source{src, blocksOnly{src}} {
					got, err := sc.SearchMin(t.Context(), s, q, 20, 0.1)
					if err != nil {
						return err
					}
					if d := cmp.Diff(want, got); d != "" {
						return fmt.Errorf("query %q, %T: hits differ (-Postings +blocks):\n%s", q, s, d)
					}
				}
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := src.ScanPostings(ctx, s.analyzer.Terms(queries[0])[0], func([]retrieval.Posting) {}); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("cancelled scan: err = %v, want context.Canceled", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
