package evalset

import "math"

// RR is the reciprocal rank of the first relevant id in the top k of ranked
// (0 when none).
func RR(ranked []string, relevant map[string]bool, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Recall is the fraction of the relevant ids found in the top k of ranked.
func Recall(ranked []string, relevant map[string]bool, k int) float64 {
	if len(relevant) == 0 {
		return 0
	}
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			found++
		}
	}
	return float64(found) / float64(len(relevant))
}

// NDCG is the normalised discounted cumulative gain of the top k of ranked
// with binary relevance.
func NDCG(ranked []string, relevant map[string]bool, k int) float64 {
	var dcg, ideal float64
	for i, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := range min(k, len(relevant)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// Metrics are the mean ranking metrics over a set of queries.
type Metrics struct {
	Queries int
	MRR10   float64
	R1      float64
	R5      float64
	R10     float64
	NDCG10  float64
}

// Accumulator averages per-query metrics. The zero value is ready.
type Accumulator struct {
	sum Metrics
}

// Add scores one query's ranking.
func (a *Accumulator) Add(ranked []string, relevant []string) {
	rel := make(map[string]bool, len(relevant))
	for _, id := range relevant {
		rel[id] = true
	}
	a.sum.Queries++
	a.sum.MRR10 += RR(ranked, rel, 10)
	a.sum.R1 += Recall(ranked, rel, 1)
	a.sum.R5 += Recall(ranked, rel, 5)
	a.sum.R10 += Recall(ranked, rel, 10)
	a.sum.NDCG10 += NDCG(ranked, rel, 10)
}

// Metrics returns the means so far.
func (a *Accumulator) Metrics() Metrics {
	m := a.sum
	if n := float64(m.Queries); n > 0 {
		m.MRR10 /= n
		m.R1 /= n
		m.R5 /= n
		m.R10 /= n
		m.NDCG10 /= n
	}
	return m
}
