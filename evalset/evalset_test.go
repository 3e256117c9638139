package evalset

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMetrics(t *testing.T) {
	rel := map[string]bool{"a": true, "b": true}
	tests := []struct {
		name              string
		ranked            []string
		rr, r1, r5, ndcg5 float64
	}{
		{"first", []string{"a", "x", "y"}, 1, 0.5, 0.5, 1 / (1 + 1/math.Log2(3))},
		{"both top", []string{"b", "a"}, 1, 0.5, 1, 1},
		{"third", []string{"x", "y", "a"}, 1.0 / 3, 0, 0.5, 0.5 / (1 + 1/math.Log2(3))},
		{"none", []string{"x", "y"}, 0, 0, 0, 0},
		{"empty", nil, 0, 0, 0, 0},
		{"beyond k", []string{"1", "2", "3", "4", "5", "a"}, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RR(tc.ranked, rel, 5); !near(got, tc.rr) {
				t.Errorf("RR@5 = %v, want %v", got, tc.rr)
			}
			if got := Recall(tc.ranked, rel, 1); !near(got, tc.r1) {
				t.Errorf("Recall@1 = %v, want %v", got, tc.r1)
			}
			if got := Recall(tc.ranked, rel, 5); !near(got, tc.r5) {
				t.Errorf("Recall@5 = %v, want %v", got, tc.r5)
			}
			if got := NDCG(tc.ranked, rel, 5); !near(got, tc.ndcg5) {
				t.Errorf("nDCG@5 = %v, want %v", got, tc.ndcg5)
			}
		})
	}
}

func TestAccumulator(t *testing.T) {
	var a Accumulator
	a.Add([]string{"a"}, []string{"a"})      // RR 1
	a.Add([]string{"x", "a"}, []string{"a"}) // RR 1/2
	a.Add([]string{"x"}, []string{"a"})      // RR 0
	m := a.Metrics()
	if m.Queries != 3 || !near(m.MRR10, 0.5) || !near(m.R1, 1.0/3) || !near(m.R10, 2.0/3) {
		t.Errorf("Metrics = %+v", m)
	}
	var empty Accumulator
	if empty.Metrics() != (Metrics{}) {
		t.Error("empty accumulator metrics not zero")
	}
}

func writeSet(t *testing.T, dir, corpus, queries string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{CorpusFile: corpus, QueriesFile: queries} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	writeSet(t, filepath.Join(root, "b-set"),
		`{"id":"d1","question":"q one","answer":"a one","lang":"en"}`+"\n\n"+`{"id":"d2","question":"q two","answer":""}`+"\n",
		`{"id":"q1","query":"one","relevant":["d1"],"query_full":"one full"}`+"\n")
	writeSet(t, filepath.Join(root, "a-set"), `{"id":"x","question":"x"}`, `{"id":"qx","query":"x","relevant":["x"]}`)
	if err := os.Mkdir(filepath.Join(root, "not-a-set"), 0o755); err != nil {
		t.Fatal(err)
	}
	sets, err := LoadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Name != "a-set" || sets[1].Name != "b-set" {
		t.Fatalf("sets = %v", sets)
	}
	b := sets[1]
	if len(b.Corpus) != 2 || b.Corpus[0].Answer != "a one" || b.Queries[0].QueryFull != "one full" || b.Queries[0].Relevant[0] != "d1" {
		t.Errorf("set b = %+v", b)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, corpus, queries, want string
	}{
		{"bad json", `{"id":`, `{"id":"q","query":"x","relevant":["d"]}`, "corpus.jsonl: line 1"},
		{"no id", `{"question":"x"}`, `{"id":"q","query":"x","relevant":["d"]}`, "record without id"},
		{"no relevant", `{"id":"d"}`, `{"id":"q","query":"x"}`, "query q has no relevant ids"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			writeSet(t, dir, tc.corpus, tc.queries)
			if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := LoadAll(t.TempDir()); err == nil {
		t.Error("LoadAll of an empty folder: want an error")
	}
}

// sharedEval is the development data next to the repository.
const sharedEval = "../../../shared/eval"

func TestLoadSharedEval(t *testing.T) {
	if _, err := os.Stat(sharedEval); err != nil {
		t.Skipf("shared eval data not available at %s: %v", sharedEval, err)
	}
	sets, err := LoadAll(sharedEval)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		ids := make(map[string]bool, len(s.Corpus))
		for _, r := range s.Corpus {
			ids[r.ID] = true
		}
		missing := 0
		for _, q := range s.Queries {
			for _, r := range q.Relevant {
				if !ids[r] {
					missing++
				}
			}
		}
		if len(s.Corpus) == 0 || len(s.Queries) == 0 || missing > 0 {
			t.Errorf("set %s: %d docs, %d queries, %d relevant ids not in the corpus", s.Name, len(s.Corpus), len(s.Queries), missing)
		}
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, b := NewSynthetic(3), NewSynthetic(3)
	zh := 0
	for i := range 200 {
		ra, rb := a.Record(i), b.Record(i)
		if ra != rb {
			t.Fatalf("record %d differs: %+v vs %+v", i, ra, rb)
		}
		if ra.Question == "" || ra.Answer == "" {
			t.Fatalf("record %d empty: %+v", i, ra)
		}
		if ra.Lang == "zh" {
			zh++
		}
	}
	if zh == 0 || zh > 60 {
		t.Errorf("%d of 200 records are Chinese, want about 1 in 10", zh)
	}
	if qa, qb := a.Query(), b.Query(); qa != qb || len(qa) < 60 {
		t.Errorf("queries %q / %q", qa, qb)
	}
	if NewSynthetic(4).Record(0) == NewSynthetic(3).Record(0) {
		t.Error("different seeds gave the same record")
	}
}

func TestLoadMixed(t *testing.T) {
	s, err := LoadMixed("zh", "../retrieval/testdata/zh_paraphrase.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "zh" || len(s.Corpus) < 50 || len(s.Queries) < 40 {
		t.Fatalf("got %s with %d QAs and %d queries", s.Name, len(s.Corpus), len(s.Queries))
	}
	for _, q := range s.Queries {
		if q.Query == "" || len(q.Relevant) == 0 {
			t.Fatalf("query %+v", q)
		}
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"kind":     `{"kind":"qa","id":"a","question":"q","answer":"a"}` + "\n" + `{"kind":"note","id":"n1"}`,
		"relevant": `{"kind":"query","id":"q1","query":"x"}`,
		"json":     `{"kind":"qa",`,
	} {
		path := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadMixed(name, path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: got %v, want an error naming the file and the line", name, err)
		}
	}
}
