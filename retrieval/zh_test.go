package retrieval

import (
	"context"
	"testing"

	"github.com/memex-dev/memex/evalset"
)

// zhMRRFloor is the MRR@10 measured on testdata/zh_paraphrase.jsonl (90
// hand-written developer QAs, 57 paraphrased queries) with DefaultParams
// (0.828 when written; 0.761 before the CJK pair weight and coordination),
// rounded down to leave room for harmless tuning.
const zhMRRFloor = 0.80

func TestChineseParaphraseMRR(t *testing.T) {
	set, err := evalset.LoadMixed("zh-paraphrase", "testdata/zh_paraphrase.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAnalyzer()
	idx := NewMemIndex(a)
	var ids []string
	for _, r := range set.Corpus {
		idx.Add(uint64(len(ids)), r.Question, r.Answer)
		ids = append(ids, r.ID)
	}
	queries := set.Queries
	if len(ids) < 90 || len(queries) < 57 {
		t.Fatalf("set has %d QAs and %d queries, want ≥ 90 and ≥ 57", len(ids), len(queries))
	}
	s := NewScorer(a, DefaultParams())
	var sum float64
	for _, q := range queries {
		hits, err := s.Search(context.Background(), idx, q.Query, 10)
		if err != nil {
			t.Fatal(err)
		}
		rr := 0.0
	rank:
		for i, h := range hits {
			for _, r := range q.Relevant {
				if ids[h.Doc] == r {
					rr = 1 / float64(i+1)
					break rank
				}
			}
		}
		if rr < 1 {
			top := ""
			if len(hits) > 0 {
				top = ids[hits[0].Doc]
			}
			t.Logf("%s %q: RR %.2f (top %s, want %v)", q.ID, q.Query, rr, top, q.Relevant)
		}
		sum += rr
	}
	mrr := sum / float64(len(queries))
	t.Logf("Chinese paraphrase MRR@10 = %.4f over %d queries", mrr, len(queries))
	if mrr < zhMRRFloor {
		t.Errorf("MRR@10 = %.4f, want ≥ %.2f", mrr, zhMRRFloor)
	}
}
