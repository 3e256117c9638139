package retrieval

// Term-frequency saturation with per-search field-length norms, and the
// coordination factor.

import (
	"math"
)

// saturation computes the BM25F term saturation of a posting.
type saturation struct {
	c0, c1, w [NumFields]float64
	k1        float64
	// norm[f][l] is fieldNorm(f, l) for l < satLens: one division per
	// posting (in of) instead of one more per field.
	norm *[NumFields][satLens]float64
}

func (s *Scorer) saturation(st Stats) saturation {
	var sat saturation
	n := float64(st.Docs)
	for f := range NumFields {
		avg := float64(st.TotalLen[f]) / n
		if avg <= 0 {
			avg = 1
		}
		b := s.p.fieldB(f)
		sat.c0[f] = 1 - b
		sat.c1[f] = b / avg
		sat.w[f] = s.p.FieldWeight[f]
	}
	sat.k1 = s.p.K1
	// The table depends on the statistics only: the last one made is kept
	// for the searches that see the same (consecutive searches of one
	// collection mostly do).
	if t := s.norms.Load(); t != nil && t.st == st {
		sat.norm = &t.norm
		return sat
	}
	t := &normTable{st: st}
	for f := range NumFields {
		for l := range uint32(satLens) {
			v := sat.computeNorm(f, l)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				v = 0
			}
			t.norm[f][l] = v
		}
	}
	s.norms.Store(t)
	sat.norm = &t.norm
	return sat
}

// normTable is the table of saturation.norm for the statistics st; it is
// not modified once made.
type normTable struct {
	st   Stats
	norm [NumFields][satLens]float64
}

// computeNorm is w_f/(1-b_f+b_f·l/avglen_f): field f's weight over its
// length normalisation at length l.
func (s *saturation) computeNorm(f int, l uint32) float64 {
	return s.w[f] / (s.c0[f] + s.c1[f]*float64(l))
}

// fieldNorm is computeNorm(f, l), from the table when l < satLens. It is
// always finite (for b_f in [0,1]: the table holds 0 where computeNorm is
// not, b_f = 1 at l = 0, a length no field holding a term has), so a field
// without the term adds exactly 0·norm = 0.
func (s *saturation) fieldNorm(f int, l uint32) float64 {
	if l < satLens {
		return s.norm[f][l]
	}
	return s.computeNorm(f, l)
}

// of returns tf'/(tf'+k1) with tf' = Σ_f tf_f·w_f/(1-b_f+b_f·len_f/avglen_f),
// evaluated as Σ_f tf_f·fieldNorm(f, len_f) whatever the path. A field
// without the term adds 0·norm, without a branch: which fields hold a term
// is unpredictable from one posting to the next.
func (s *saturation) of(tf TF, lens [NumFields]uint32) float64 {
	var t float64
	for f := range NumFields {
		t += float64(tf[f]) * s.fieldNorm(f, lens[f])
	}
	if t <= 0 {
		return 0
	}
	return t / (t + s.k1)
}

// coordFull is the share of the query's idf mass from which a document's
// coverage is not penalised by coordination: a Chinese paraphrase rarely
// shares more than a third of the query's characters and pairs, so
// coordination separates weak partial matches from plausible ones rather
// than ranking plausible ones by coverage (and it leaves their Relevance,
// which min_score thresholds, unchanged).
const coordFull = 1.0 / 3

// coordFactor is min(1, cov/(coordFull·norm))^e: the coordination factor of
// a document that matches cov of the query's idf mass norm.
func coordFactor(cov, norm, e float64) float64 {
	full := coordFull * norm
	if full <= 0 || cov >= full {
		return 1
	}
	return math.Pow(cov/full, e)
}

// idf is the BM25 inverse document frequency, always positive.
func idf(n, df float64) float64 {
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}
