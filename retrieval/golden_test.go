package retrieval

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/memex-dev/memex/evalset"
)

// goldenParams are DefaultParams as they were when the digests of
// TestSearchGolden were recorded, written out so that tuning the defaults
// does not move them.
func goldenParams() Params {
	return Params{
		K1:              1.4,
		K3:              2,
		B:               0.75,
		FieldWeight:     [NumFields]float64{2, 0.3},
		FieldB:          [NumFields]float64{0, 0.9},
		PostingBudget:   4096,
		RescoreDepth:    100,
		IDFExponent:     0.8,
		CJKWeight:       1.0 / 3,
		CJKBigramWeight: 0.5,
		CompoundWeight:  0.5,
		CJKCoord:        1,
		CJKCalibration:  0.45,
	}
}

// goldenDigests are the SHA-256 digests (first 8 bytes, hex) of the hits
// — every document id, Score and Relevance, bit for bit — of the searches
// of TestSearchGolden by corpus and configuration (every Source gives the
// same), as recorded at 100cf85. A change that is meant to
// make searches faster, not different, leaves them as they are; one that
// changes ranking on purpose records them again
// (MEMEX_GOLDEN_PRINT=1 go test ./retrieval -run SearchGolden -v).
var goldenDigests = map[string]string{
	"zh/top10":                   "d064dd7b5dbf0ee1",
	"zh/all":                     "3d493c5b8c9d99ab",
	"zh/min0.2":                  "4d90f1f02ca4a8d0",
	"zh/exact":                   "d064dd7b5dbf0ee1",
	"zh/budget300":               "d064dd7b5dbf0ee1",
	"zh/budget300-min0.2":        "4d90f1f02ca4a8d0",
	"zh/top30":                   "1719bdccce410de5",
	"zh/budget40":                "669c87b07b47cd3e",
	"synthetic/top10":            "1a8ff422f9993527",
	"synthetic/all":              "19775176debf7454",
	"synthetic/min0.2":           "6f0d0d7021a5ca68",
	"synthetic/exact":            "9f13ff5cedac9f30",
	"synthetic/budget300":        "3d7f60622825cbe6",
	"synthetic/budget300-min0.2": "48921c8ffad161d8",
	"synthetic/top30":            "dcada92f21ceb616",
	"synthetic/budget40":         "b8e77923e76156c0",
}

// TestSearchGolden pins the results of the scorer's paths, bit for bit,
// against those of an earlier build: the Chinese paraphrase set (90 QAs,
// coordination and calibration) and a synthetic corpus of 3,000 QAs
// (English with ~10 % Chinese, sparse document ids), each searched through
// a *MemIndex (its range scoring, its TermFreqs), through Postings only and
// through shuffled blocks (the hash table, the rescoring from postings), for
// a top 10, every hit, a min_score of 0.2, no posting budget and a small
// one (terms deferred and rescored).
func TestSearchGolden(t *testing.T) {
	type corpus struct {
		name    string
		idx     *MemIndex
		queries []string
	}
	a := NewAnalyzer()
	var corpora []corpus
	{
		set, err := evalset.LoadMixed("zh", "testdata/zh_paraphrase.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		idx := NewMemIndex(a)
		for i, r := range set.Corpus {
			idx.Add(uint64(i), r.Question, r.Answer)
		}
		var qs []string
		for _, q := range set.Queries {
			qs = append(qs, q.Query)
		}
		corpora = append(corpora, corpus{"zh", idx, qs})
	}
	{
		gen := evalset.NewSynthetic(5)
		idx := NewMemIndex(a)
		for i := range 3000 {
			r := gen.Record(i)
			idx.Add(uint64(7*i+3), r.Question, r.Answer)
		}
		var qs []string
		for range 150 {
			qs = append(qs, gen.Query())
		}
		// Short questions too, and a few Chinese ones from the records.
		for i := range 50 {
			r := gen.Record(3000 + i)
			qs = append(qs, r.Question)
		}
		corpora = append(corpora, corpus{"synthetic", idx, qs})
	}
	type config struct {
		name   string
		budget int64
		k      int
		min    float64
	}
	configs := []config{
		{"top10", 4096, 10, 0},
		{"all", 4096, 0, 0},
		{"min0.2", 4096, 10, 0.2},
		{"exact", 0, 10, 0},
		{"budget300", 300, 10, 0},
		{"budget300-min0.2", 300, 20, 0.2},
		{"top30", 4096, 30, 0},
		{"budget40", 40, 10, 0},
	}
	ctx := context.Background()
	print := os.Getenv("MEMEX_GOLDEN_PRINT") != ""
	for _, c := range corpora {
		sources := []struct {
			name string
			src  Source
		}{
			{"memindex", c.idx},
			{"postings", postingsOnly{c.idx}},
			{"blocks", blockIndex{m: c.idx, shuffle: true, scans: new(int)}},
		}
		for _, cf := range configs {
			p := goldenParams()
			p.PostingBudget = cf.budget
			s := NewScorer(a, p)
			name := c.name + "/" + cf.name
			for _, src := range sources {
				h := sha256.New()
				var buf [8]byte
				for _, q := range c.queries {
					hits, err := s.SearchMin(ctx, src.src, q, cf.k, cf.min)
					if err != nil {
						t.Fatal(err)
					}
					binary.LittleEndian.PutUint64(buf[:], uint64(len(hits)))
					h.Write(buf[:])
					for _, hit := range hits {
						for _, v := range []uint64{hit.Doc, math.Float64bits(hit.Score), math.Float64bits(hit.Relevance)} {
							binary.LittleEndian.PutUint64(buf[:], v)
							h.Write(buf[:])
						}
					}
				}
				got := fmt.Sprintf("%x", h.Sum(nil)[:8])
				if print {
					fmt.Printf("\t%q: %q, // %s\n", name, got, src.name)
					continue
				}
				if want, ok := goldenDigests[name]; !ok {
					t.Errorf("%s: no digest recorded", name)
				} else if got != want {
					t.Errorf("%s through %s: digest %s, recorded %s: the hits differ", name, src.name, got, want)
				}
			}
		}
	}
}
