package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/retrieval"
)

// postingsOnly hides the source's TermFreqs: the scorer then rescores by
// reading postings, the reference result.
type postingsOnly struct{ src *source }

func (p postingsOnly) Stats(ctx context.Context) (retrieval.Stats, error) { return p.src.Stats(ctx) }
func (p postingsOnly) DocFreq(ctx context.Context, t string) (int64, error) {
	return p.src.DocFreq(ctx, t)
}
func (p postingsOnly) Postings(ctx context.Context, t string, fn func(retrieval.Posting) bool) error {
	return p.src.Postings(ctx, t, fn)
}

// randomSource builds a two-scope source over random documents of words
// w0..w39 (w0 in most documents, w39 in few), in the Redis codec, and
// returns the packed lists too (scope index → term → list).
func randomSource(rng *rand.Rand, docsPerScope int) (*source, []map[string]string) {
	src := &source{}
	var packed []map[string]string
	for si, owner := range []string{"p", "global"} {
		sc := &scope{owner: owner, name: ownScope, lists: map[string]*plist{}}
		packed = append(packed, map[string]string{})
		lists := map[string][]byte{}
		last := map[string]uint64{}
		buckets := make([][]byte, docsPerScope/lensBucket+1)
		for d := uint64(1); d <= uint64(docsPerScope); d++ {
			var lens [retrieval.NumFields]uint32
			for w := range 40 {
				if rng.IntN(40) < 40-w { // w0 almost always, w39 rarely
					tf := retrieval.TF{uint32(rng.IntN(3)), uint32(1 + rng.IntN(20))}
					if w%7 == 0 {
						tf[1] = 300 // the long tf form
					}
					t := fmt.Sprintf("w%d", w)
					l := lists[t]
					if l == nil {
						l = make([]byte, postingHeader)
					}
					l = binary.AppendUvarint(l, d-last[t])
					l = append(l, postingRest(tf)...)
					lists[t], last[t] = l, d
					lens[0] += tf[0]
					lens[1] += tf[1]
				}
			}
			b := &buckets[d/lensBucket]
			for len(*b) < int(d%lensBucket+1)*lensSize {
				*b = append(*b, 0)
			}
			copy((*b)[int(d%lensBucket)*lensSize:], lensEntry(lens))
			sc.docs++
			sc.lens[0] += int64(lens[0])
			sc.lens[1] += int64(lens[1])
		}
		lens := map[uint64]string{}
		for n, b := range buckets {
			lens[uint64(n)] = string(b)
		}
		for t, l := range lists {
			binary.BigEndian.PutUint32(l, uint32(last[t]))
			sc.lists[t] = decodeList(string(l)).withLens(lens)
			packed[si][t] = string(l)
		}
		src.scopes = append(src.scopes, sc)
	}
	return src, packed
}

// TestTermFreqsMatchPostings checks the decoded lists against the packed
// ones (forPostings, the codec's own reader), TermFreqs against the
// postings, and a search that rescores through it against one that reads
// postings.
func TestTermFreqsMatchPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	src, packed := randomSource(rng, 3000)
	long := 0
	for si := range src.scopes {
		for term, list := range packed[si] {
			type posting struct {
				doc uint64
				tf  retrieval.TF
			}
			var want, got []posting
			buckets := map[uint32]bool{}
			forPostings(list, func(doc uint64, tf retrieval.TF) bool {
				want = append(want, posting{doc, tf})
				buckets[uint32(doc/lensBucket)] = true
				return true
			})
			l := decodeList(list)
			for i, d := range l.docs {
				got = append(got, posting{uint64(d), tfOf(l.post[i])})
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(posting{})); diff != "" {
				t.Errorf("scope %d, %s: decoded list differs (-forPostings +decodeList):\n%s", si, term, diff)
			}
			if len(l.buckets) != len(buckets) || !slices.IsSorted(l.buckets) {
				t.Errorf("scope %d, %s: buckets %v, want the %d distinct ones in order", si, term, l.buckets, len(buckets))
			}
			if len(l.docs) > 1000 {
				long++
			}
		}
	}
	if long == 0 {
		t.Fatal("no long list: the galloping search is not exercised")
	}
	ranked := map[bool]int{}
	for _, sc := range src.scopes {
		for _, l := range sc.lists {
			ranked[l.rank != nil]++
		}
	}
	if ranked[true] == 0 || ranked[false] == 0 {
		t.Fatalf("lists with and without a docRank: %v, want both", ranked)
	}
	ctx := t.Context()
	terms := []string{"w0", "w3", "w7", "w38", "absent"}
	var docs []uint64
	for range 150 {
		docs = append(docs, uint64(rng.IntN(2))<<32|uint64(1+rng.IntN(3100))) // some past the last doc
	}
	docs = append(docs, docs[0]) // a repeat
	want := map[uint64][]retrieval.TF{}
	for j, term := range terms {
		_ = src.Postings(ctx, term, func(p retrieval.Posting) bool {
			if want[p.Doc] == nil {
				want[p.Doc] = make([]retrieval.TF, len(terms))
			}
			want[p.Doc][j] = p.TF
			return true
		})
	}
	seen := map[uint64]bool{}
	err := src.TermFreqs(ctx, docs, terms, func(doc uint64, tfs []retrieval.TF, lens [retrieval.NumFields]uint32) {
		if seen[doc] {
			t.Errorf("doc %x reported twice", doc)
		}
		seen[doc] = true
		w := want[doc]
		if w == nil {
			w = make([]retrieval.TF, len(terms))
		}
		if diff := cmp.Diff(w, tfs); diff != "" {
			t.Errorf("doc %x: tfs differ (-postings +TermFreqs):\n%s", doc, diff)
		}
		var wantLens [retrieval.NumFields]uint32
		_ = src.Postings(ctx, "w0", func(p retrieval.Posting) bool {
			if p.Doc == doc {
				wantLens = p.Len
			}
			return p.Doc < doc || p.Doc>>32 != doc>>32
		})
		if w[0] != (retrieval.TF{}) && lens != wantLens {
			t.Errorf("doc %x: lens %v, want %v", doc, lens, wantLens)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !seen[d] {
			t.Errorf("doc %x not reported", d)
		}
	}

	params := retrieval.DefaultParams()
	params.PostingBudget, params.RescoreDepth = 500, 40 // force rescoring
	sc := retrieval.NewScorer(retrieval.NewAnalyzer(), params)
	for _, q := range []string{"w0 w3 w38", "w1 w2 w5 w36 w37", "w0 w39 absent", "w9 w10 w11 w12 w13 w14 w35"} {
		fast, err := sc.Search(ctx, src, q, 20)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := sc.Search(ctx, postingsOnly{src}, q, 20)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Errorf("%q: hits differ (-postings +TermFreqs):\n%s", q, diff)
		}
	}
}

// TestDocRank checks a docRank's index of every id around a dense list's
// documents (its first one not on a word boundary) against a search.
func TestDocRank(t *testing.T) {
	var docs []uint32
	for d := uint32(70); d < 9000; d += 1 + d%5 {
		docs = append(docs, d)
	}
	r := newDocRank(docs)
	if r == nil {
		t.Fatal("a dense list of 2,000 documents has no docRank")
	}
	for d := uint32(0); d < 9100; d++ {
		want, ok := slices.BinarySearch(docs, d)
		if !ok {
			want = -1
		}
		if got := r.index(d); got != want {
			t.Fatalf("index(%d) = %d, want %d", d, got, want)
		}
	}
	sparse := make([]uint32, 300)
	for i := range sparse {
		sparse[i] = uint32(i) * 64 * rankMinDensity
	}
	if newDocRank(sparse) != nil || newDocRank(docs[:rankMinDocs-1]) != nil {
		t.Error("a sparse or short list has a docRank")
	}
}
