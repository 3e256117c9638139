package bench

import (
	"fmt"
	"io"
	"time"
)

// SetResults are every engine's results on one set; Scored says whether
// the set has relevance judgements.
type SetResults struct {
	Set     *Set
	Scored  bool
	Results []Result // memex first
}

// WriteQuality prints the quality table of one set.
func WriteQuality(w io.Writer, sr SetResults) {
	fmt.Fprintf(w, "\n### Quality: %s (%d QAs, %d queries)\n\n", sr.Set.Name, len(sr.Set.Corpus), len(sr.Set.Queries))
	fmt.Fprintln(w, "| engine | MRR@10 | Recall@1 | Recall@5 | Recall@10 | nDCG@10 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, r := range sr.Results {
		q := r.Quality
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.Engine, q.MRR10, q.R1, q.R5, q.R10, q.NDCG10)
	}
}

// WriteSpeed prints the speed table of one set.
func WriteSpeed(w io.Writer, sr SetResults, runs int) {
	note := ""
	if runs > 1 {
		note = fmt.Sprintf(", median of %d runs", runs)
	}
	fmt.Fprintf(w, "\n### Speed: %s (%d QAs, %d distinct queries%s)\n\n", sr.Set.Name, len(sr.Set.Corpus), len(sr.Set.Queries), note)
	fmt.Fprintln(w, "| engine | build | heap B/QA | disk B/QA | p50 | p99 | QPS (2 goroutines) | memex p50 speed-up |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	mp50 := sr.Results[0].Speed.P50
	for _, r := range sr.Results {
		s := r.Speed
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.0f | %s |\n", r.Engine, dur(s.Build), bytes(s.HeapPerQA), bytes(s.DiskPerQA),
			dur(s.P50), dur(s.P99), s.QPS2, ratio(float64(s.P50), float64(mp50)))
	}
}

// WriteSummary prints memex against the best other engine on every set.
func WriteSummary(w io.Writer, all []SetResults) {
	fmt.Fprintln(w, "\n### Summary: memex against the best other engine")
	fmt.Fprintln(w, "\n| set | memex MRR@10 | best other | its MRR@10 | memex / best | memex p50 | fastest other | its p50 | speed-up | memex QPS | best other QPS | QPS ratio |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
	var sumRatio float64
	scored := 0
	for _, sr := range all {
		m := sr.Results[0]
		best, fast, qps := -1, -1, -1
		for i, r := range sr.Results[1:] {
			i++
			if best < 0 || r.Quality.MRR10 > sr.Results[best].Quality.MRR10 {
				best = i
			}
			if fast < 0 || r.Speed.P50 < sr.Results[fast].Speed.P50 {
				fast = i
			}
			if qps < 0 || r.Speed.QPS2 > sr.Results[qps].Speed.QPS2 {
				qps = i
			}
		}
		if best < 0 {
			continue
		}
		mrr := "–"
		bestName, bestMRR, rel := "–", "–", "–"
		if sr.Scored {
			b := sr.Results[best]
			mrr = fmt.Sprintf("%.3f", m.Quality.MRR10)
			bestName, bestMRR = b.Engine, fmt.Sprintf("%.3f", b.Quality.MRR10)
			rel = ratio(m.Quality.MRR10, b.Quality.MRR10)
			if b.Quality.MRR10 > 0 {
				sumRatio += m.Quality.MRR10 / b.Quality.MRR10
				scored++
			}
		}
		f, q := sr.Results[fast], sr.Results[qps]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f (%s) | %s |\n", sr.Set.Name, mrr, bestName, bestMRR, rel,
			dur(m.Speed.P50), f.Engine, dur(f.Speed.P50), ratio(float64(f.Speed.P50), float64(m.Speed.P50)),
			m.Speed.QPS2, q.Speed.QPS2, q.Engine, ratio(m.Speed.QPS2, q.Speed.QPS2))
	}
	if scored > 0 {
		fmt.Fprintf(w, "\nMean over the %d scored sets of memex MRR@10 / best other engine's MRR@10: %.3f (target ≥ 1.05).\n", scored, sumRatio/float64(scored))
	}
}

// WriteLosses prints up to n queries of a scored set where memex ranks the
// first relevant QA lower than the best other engine does.
func WriteLosses(w io.Writer, sr SetResults, n int) {
	if !sr.Scored || n <= 0 {
		return
	}
	type loss struct {
		q        int
		memex    float64
		best     float64
		bestName string
	}
	var ls []loss
	var scoredQ []Query
	for _, q := range sr.Set.Queries {
		if len(q.Relevant) > 0 {
			scoredQ = append(scoredQ, q)
		}
	}
	wins, losses := 0, 0
	for i := range scoredQ {
		m := sr.Results[0].RR[i]
		l := loss{q: i, memex: m}
		for _, r := range sr.Results[1:] {
			if r.RR[i] > l.best {
				l.best, l.bestName = r.RR[i], r.Engine
			}
		}
		switch {
		case l.best > m:
			losses++
			ls = append(ls, l)
		case m > l.best:
			wins++
		}
	}
	fmt.Fprintf(w, "\n#### %s: memex ranks the first relevant QA better than every other engine on %d queries, worse than the best of them on %d\n\n", sr.Set.Name, wins, losses)
	// Largest gaps first.
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].best-ls[j].memex > ls[j-1].best-ls[j-1].memex; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
	for _, l := range ls[:min(n, len(ls))] {
		q := scoredQ[l.q]
		fmt.Fprintf(w, "- %s RR memex %.2f vs %s %.2f: %q\n", q.ID, l.memex, l.bestName, l.best, q.Query)
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func bytes(b float64) string {
	if b == 0 {
		return "–"
	}
	if b >= 10240 {
		return fmt.Sprintf("%.1f KiB", b/1024)
	}
	return fmt.Sprintf("%.0f", b)
}
