//go:build !race

// (The race detector drops sync.Pool items at random: the pooled buffers
// would be allocated again.)

package retrieval

import (
	"context"
	"testing"

	"github.com/memex-dev/memex/evalset"
)

// TestSearchAllocs: a search of a *MemIndex allocates only what it
// returns — the query's terms (one string for all, one slice) and the hits
// — for a Chinese query (coordination, scored range by range) and an
// English one.
func TestSearchAllocs(t *testing.T) {
	set, err := evalset.LoadMixed("zh", "testdata/zh_paraphrase.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAnalyzer()
	idx := NewMemIndex(a)
	for i, r := range set.Corpus {
		idx.Add(uint64(i), r.Question, r.Answer)
	}
	s := NewScorer(a, DefaultParams())
	ctx := context.Background()
	for _, q := range []string{set.Queries[0].Query, "docker container exits right after it starts"} {
		search := func() {
			if hits, err := s.Search(ctx, idx, q, 10); err != nil || len(hits) == 0 {
				t.Fatal(hits, err)
			}
		}
		search() // fills the pools
		if got := testing.AllocsPerRun(100, search); got > 3 {
			t.Errorf("%q: %v allocations a search, want 3", q, got)
		}
	}
}
