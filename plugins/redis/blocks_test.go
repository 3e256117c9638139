package redisstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/retrieval"
)

// blocksOnly hides the source's TermFreqs but keeps its block scan: the
// scorer then reads every list, deferred ones included, in blocks.
type blocksOnly struct{ src *source }

func (b blocksOnly) Stats(ctx context.Context) (retrieval.Stats, error) { return b.src.Stats(ctx) }
func (b blocksOnly) DocFreq(ctx context.Context, t string) (int64, error) {
	return b.src.DocFreq(ctx, t)
}
func (b blocksOnly) Postings(ctx context.Context, t string, fn func(retrieval.Posting) bool) error {
	panic("Postings read although the source scans blocks")
}
func (b blocksOnly) ScanPostings(ctx context.Context, t string, fn func([]retrieval.Posting)) error {
	return b.src.ScanPostings(ctx, t, fn)
}

// TestScanPostingsMatchPostings: the blocks hold the packed lists'
// postings (forPostings, the codec's own reader), scope by scope in doc
// order; Postings gives them one at a time and stops when asked; and a
// search reading blocks scores bit for bit as one reading Postings, with
// and without TermFreqs.
func TestScanPostingsMatchPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src, packed := randomSource(rng, 3000)
	ctx := t.Context()
	type posting struct {
		doc uint64
		tf  retrieval.TF
	}
	long := false
	for _, term := range []string{"w0", "w3", "w7", "w20", "w38", "w39", "absent"} {
		var want, got []posting
		for si := range src.scopes {
			forPostings(packed[si][term], func(doc uint64, tf retrieval.TF) bool {
				want = append(want, posting{uint64(si)<<32 | doc, tf})
				return true
			})
		}
		blocks := 0
		err := src.ScanPostings(ctx, term, func(ps []retrieval.Posting) {
			if len(ps) == 0 || len(ps) > scanBlock {
				t.Errorf("%s: block of %d postings", term, len(ps))
			}
			blocks++
			for _, p := range ps {
				got = append(got, posting{p.Doc, p.TF})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(posting{})); diff != "" {
			t.Errorf("%s: blocks differ from the packed lists (-forPostings +ScanPostings):\n%s", term, diff)
		}
		long = long || blocks > 2
		n := 0
		_ = src.Postings(ctx, term, func(p retrieval.Posting) bool {
			if n++; n < 300 && (posting{p.Doc, p.TF}) != want[n-1] {
				t.Errorf("%s: Postings' posting %d is %v, want %v", term, n-1, p, want[n-1])
			}
			return n < 300
		})
		if n != min(len(want), 300) {
			t.Errorf("%s: Postings called fn %d times, want %d (stopped at 300)", term, n, min(len(want), 300))
		}
	}
	if !long {
		t.Fatal("no list of several blocks")
	}

	params := retrieval.DefaultParams()
	params.PostingBudget, params.RescoreDepth = 500, 40 // force rescoring
	for _, p := range []retrieval.Params{retrieval.DefaultParams(), params} {
		sc := retrieval.NewScorer(retrieval.NewAnalyzer(), p)
		for _, q := range []string{"w0 w3 w38", "w1 w2 w5 w36 w37", "w0 w39 absent", "w9 w10 w11 w12 w13 w14 w35"} {
			for _, minRel := range []float64{0, 0.2} {
				want, err := sc.SearchMin(ctx, postingsOnly{src}, q, 20, minRel)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range []retrieval.Source{src, blocksOnly{src}} {
					got, err := sc.SearchMin(ctx, s, q, 20, minRel)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%q min %.1f, %T: hits differ (-Postings +blocks):\n%s", q, minRel, s, diff)
					}
				}
			}
		}
	}
}

// TestScanPostingsCancelled: the scan stops between blocks once the
// context is cancelled.
func TestScanPostingsCancelled(t *testing.T) {
	src, _ := randomSource(rand.New(rand.NewPCG(11, 12)), 3000)
	ctx, cancel := context.WithCancel(t.Context())
	blocks := 0
	err := src.ScanPostings(ctx, "w0", func([]retrieval.Posting) {
		if blocks++; blocks == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || blocks != 2 {
		t.Errorf("err = %v after %d blocks, want context.Canceled after 2", err, blocks)
	}
}
