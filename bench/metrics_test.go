package bench

import (
	"math"
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
