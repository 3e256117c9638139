package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/memex-dev/memex/evalset"
	"github.com/memex-dev/memex/retrieval"
)

// paramFlags registers flags that override retrieval.DefaultParams.
func paramFlags(fs *flag.FlagSet) *retrieval.Params {
	p := retrieval.DefaultParams()
	fs.Float64Var(&p.K1, "k1", p.K1, "BM25F k1")
	fs.Float64Var(&p.K3, "k3", p.K3, "query-term frequency saturation (0: repeats count once)")
	fs.Float64Var(&p.B, "b", p.B, "BM25F b (all fields)")
	fs.Float64Var(&p.FieldB[retrieval.FieldQuestion], "bq", p.FieldB[retrieval.FieldQuestion], "b of the question field (0: use -b)")
	fs.Float64Var(&p.FieldB[retrieval.FieldAnswer], "ba", p.FieldB[retrieval.FieldAnswer], "b of the answer field (0: use -b)")
	fs.Float64Var(&p.FieldWeight[retrieval.FieldQuestion], "wq", p.FieldWeight[retrieval.FieldQuestion], "question field weight")
	fs.Float64Var(&p.FieldWeight[retrieval.FieldAnswer], "wa", p.FieldWeight[retrieval.FieldAnswer], "answer field weight")
	fs.Int64Var(&p.PostingBudget, "budget", p.PostingBudget, "posting budget (0: exact)")
	fs.IntVar(&p.RescoreDepth, "depth", p.RescoreDepth, "candidates rescored with deferred terms")
	fs.Float64Var(&p.IDFExponent, "idfexp", p.IDFExponent, "exponent applied to every idf (0: 1)")
	fs.Float64Var(&p.CJKWeight, "cjkweight", p.CJKWeight, "idf weight of every CJK term (0: 1)")
	fs.Float64Var(&p.CJKBigramWeight, "cjkbigram", p.CJKBigramWeight, "idf weight of CJK character pairs (0: 1)")
	fs.Float64Var(&p.CompoundWeight, "compound", p.CompoundWeight, "idf weight of a compound's whole term (0: 1)")
	fs.Float64Var(&p.CJKCoord, "cjkcoord", p.CJKCoord, "coordination strength for queries with CJK text (0: off)")
	fs.Float64Var(&p.CJKCalibration, "cjkcal", p.CJKCalibration, "Relevance calibration for queries with CJK text (0: off)")
	fs.Float64Var(&p.FunctionWordWeight, "fww", p.FunctionWordWeight, "weight of the query's function words in the re-rank of the final hits (0: off)")
	return &p
}

func runQuality(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("quality", flag.ContinueOnError)
	dir := fs.String("eval", "", "folder of evaluation sets (default: ../shared/eval from the repository root)")
	zh := fs.String("zh", "", "Chinese paraphrase set in retrieval's testdata format (default: retrieval/testdata/zh_paraphrase.jsonl; \"-\" to skip)")
	full := fs.Bool("full", false, "query with query_full (title + body) when a query has it")
	distractors := fs.Int("distractors", 0, "index this many synthetic QAs beside each set (quality at scale, where the posting budget approximates)")
	p := paramFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *zh == "" {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		if *dir == "" {
			*dir = filepath.Join(root, "..", "shared", "eval")
		}
		if *zh == "" {
			*zh = filepath.Join(root, "retrieval", "testdata", "zh_paraphrase.jsonl")
		}
	}
	sets, err := evalset.LoadAll(*dir)
	if err != nil {
		return err
	}
	if *zh != "-" {
		s, err := evalset.LoadMixed("zh-paraphrase", *zh)
		if err != nil {
			return err
		}
		sets = append(sets, s)
	}
	ctx := context.Background()
	a := retrieval.NewAnalyzer()
	sc := retrieval.NewScorer(a, *p)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if *distractors > 0 {
		fmt.Fprintf(out, "each set indexed with %d synthetic distractor QAs (English technical prose, ~10%% Chinese)\n", *distractors)
	}
	fmt.Fprintf(tw, "set\tdocs\tqueries\tMRR@10\tR@1\tR@5\tR@10\tnDCG@10\t\n")
	var sum float64
	for _, s := range sets {
		m, err := evaluate(ctx, a, sc, s, *full, *distractors)
		if err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
		sum += m.MRR10
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t\n", s.Name, len(s.Corpus), m.Queries, m.MRR10, m.R1, m.R5, m.R10, m.NDCG10)
	}
	fmt.Fprintf(tw, "mean\t\t\t%.4f\t\t\t\t\t\n", sum/float64(len(sets)))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "params %+v\n", *p)
	return err
}

// evaluate indexes s's corpus in a MemIndex, with distractors synthetic QAs
// after it (doc ids past the corpus: never relevant), and ranks every query.
func evaluate(ctx context.Context, a *retrieval.Analyzer, sc *retrieval.Scorer, s *evalset.Set, full bool, distractors int) (evalset.Metrics, error) {
	idx := retrieval.NewMemIndex(a)
	for i, r := range s.Corpus {
		idx.Add(uint64(i), r.Question, r.Answer)
	}
	syn := evalset.NewSynthetic(99)
	distractorQs := make([]string, distractors) // for Rerank
	for i := range distractors {
		r := syn.Record(i)
		idx.Add(uint64(len(s.Corpus)+i), r.Question, r.Answer)
		distractorQs[i] = r.Question
	}
	var acc evalset.Accumulator
	for _, q := range s.Queries {
		text := q.Query
		if full && q.QueryFull != "" {
			text = q.QueryFull
		}
		hits, err := sc.Search(ctx, idx, text, 10)
		if err != nil {
			return evalset.Metrics{}, err
		}
		sc.Rerank(text, hits, func(i int) retrieval.FunctionWords {
			if d := hits[i].Doc; d < uint64(len(s.Corpus)) {
				return retrieval.FunctionWordsOf(s.Corpus[d].Question)
			}
			return retrieval.FunctionWordsOf(distractorQs[int(hits[i].Doc)-len(s.Corpus)])
		})
		ranked := make([]string, len(hits))
		for i, h := range hits {
			if h.Doc < uint64(len(s.Corpus)) {
				ranked[i] = s.Corpus[h.Doc].ID
			} else {
				ranked[i] = fmt.Sprintf("distractor-%d", h.Doc)
			}
		}
		acc.Add(ranked, q.Relevant)
	}
	return acc.Metrics(), nil
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; pass -eval DIR")
		}
		dir = parent
	}
}

func runLatency(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	n := fs.Int("n", 100000, "synthetic QAs to index")
	nq := fs.Int("queries", 2000, "queries to time")
	k := fs.Int("k", 10, "hits per query")
	seed := fs.Uint64("seed", 1, "generator seed")
	repeat := fs.Int("repeat", 5, "time each query this many times and keep its fastest run (noise filter)")
	p := paramFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n <= 0 || *nq <= 0 {
		return errors.New("-n and -queries must be positive")
	}
	a := retrieval.NewAnalyzer()
	idx := retrieval.NewMemIndex(a)
	gen := evalset.NewSynthetic(*seed)
	t0 := time.Now()
	for i := range *n {
		r := gen.Record(i)
		idx.Add(uint64(i), r.Question, r.Answer)
	}
	build := time.Since(t0)
	queries := make([]string, *nq)
	for i := range queries {
		queries[i] = gen.Query()
	}
	sc := retrieval.NewScorer(a, *p)
	ctx := context.Background()
	// Warm up, then time each query.
	for _, q := range queries[:min(100, len(queries))] {
		if _, err := sc.Search(ctx, idx, q, *k); err != nil {
			return err
		}
	}
	// first: one timed pass; best: each query's fastest of -repeat passes.
	first := make([]time.Duration, len(queries))
	best := make([]time.Duration, len(queries))
	var hits int
	for r := range max(*repeat, 1) {
		for i, q := range queries {
			t := time.Now()
			hs, err := sc.Search(ctx, idx, q, *k)
			d := time.Since(t)
			if err != nil {
				return err
			}
			if r == 0 {
				first[i], best[i] = d, d
				hits += len(hs)
			}
			best[i] = min(best[i], d)
		}
	}
	slices.Sort(first)
	slices.Sort(best)
	pct := func(lat []time.Duration, p float64) time.Duration {
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Fprintf(out, "docs=%d queries=%d k=%d build=%s mean_hits=%.1f\n", *n, *nq, *k, build.Round(time.Millisecond), float64(hits)/float64(len(queries)))
	fmt.Fprintf(out, "params %+v\n", *p)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "timing\tp50\tp90\tp99\tmax\t\n")
	for _, row := range []struct {
		name string
		lat  []time.Duration
	}{{"single pass", first}, {fmt.Sprintf("best of %d", max(*repeat, 1)), best}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", row.name, pct(row.lat, 0.5), pct(row.lat, 0.9), pct(row.lat, 0.99), row.lat[len(row.lat)-1])
	}
	return tw.Flush()
}
