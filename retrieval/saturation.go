package retrieval

// Term-frequency saturation with per-search field-length norms, and the
// coordination factor.

import (
	"math"
	"sync/atomic"
)

// saturation computes the BM25F term saturation of a posting.
type saturation struct {
	c0, c1, w [NumFields]float64
	k1        float64
	// norm[f][l] is fieldNorm(f, l) for l < satLens: one division per
	// posting (in of) instead of one more per field.
	norm *[NumFields][satLens]float64
}

func (s *Scorer) saturation(t *statsTables) saturation {
	var sat saturation
	st := t.st
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
	sat.norm = &t.norm
	return sat
}

// tables returns the tables of the statistics st. They depend on the
// statistics only: the last ones made are kept for the searches that see
// the same (consecutive searches of one collection mostly do).
func (s *Scorer) tables(st Stats) *statsTables {
	if t := s.stats.Load(); t != nil && t.st == st {
		return t
	}
	t := &statsTables{st: st}
	sat := s.saturation(t)
	for f := range NumFields {
		for l := range uint32(satLens) {
			v := sat.computeNorm(f, l)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				v = 0
			}
			t.norm[f][l] = v
		}
	}
	t.idf = make([]atomic.Uint64, min(st.Docs+1, idfLens))
	s.stats.Store(t)
	return t
}

// idfLens bounds the document frequencies whose raised idf statsTables
// keeps.
const idfLens = 1024

// statsTables holds what searches compute from the statistics st alone:
// the table of saturation.norm, made with the tables and not modified
// after, and the raised idf (Params.raisedIDF) by document frequency,
// filled as searches meet the frequencies.
type statsTables struct {
	st   Stats
	norm [NumFields][satLens]float64
	// idf[df] holds the bits of raisedIDF(Docs, df); 0 where not yet
	// computed (a raised idf is positive).
	idf []atomic.Uint64
}

// raisedIDF is p.raisedIDF(Docs, df), from the table when df is in it.
// Searches sharing the tables may fill an entry at the same time: they
// store the same bits.
func (t *statsTables) raisedIDF(p *Params, df int64) float64 {
	if df < 0 || df >= int64(len(t.idf)) {
		return p.raisedIDF(float64(t.st.Docs), float64(df))
	}
	if b := t.idf[df].Load(); b != 0 {
		return math.Float64frombits(b)
	}
	v := p.raisedIDF(float64(t.st.Docs), float64(df))
	t.idf[df].Store(math.Float64bits(v))
	return v
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

// coordMemo is coordFactor(cov, norm, e) for one search's norm and e,
// remembering the factors of recent coverages by their bits: the documents
// that match the same terms mostly have the same coverage, their idfs
// summed in the same order.
type coordMemo struct {
	norm, e float64
	filled  uint64 // bit i: slot i holds a factor
	covs    [coordMemoSlots]uint64
	factors [coordMemoSlots]float64
}

const coordMemoSlots = 64

func newCoordMemo(norm, e float64) coordMemo { return coordMemo{norm: norm, e: e} }

// factor is coordFactor(cov, m.norm, m.e).
func (m *coordMemo) factor(cov float64) float64 {
	b := math.Float64bits(cov)
	i := (b * 0x9e3779b97f4a7c15) >> 58 // 64 slots
	if m.filled&(1<<i) != 0 && m.covs[i] == b {
		return m.factors[i]
	}
	f := coordFactor(cov, m.norm, m.e)
	m.filled |= 1 << i
	m.covs[i], m.factors[i] = b, f
	return f
}

// idf is the BM25 inverse document frequency, always positive.
func idf(n, df float64) float64 {
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}
