package retrieval

// Params tune the scorer: BM25F weights and saturation, idf, the posting
// budget, and the calibration of raw scores into Relevance.

import (
	"context"
	"math"
)

// Params tune BM25F and the cost bounds of Search.
type Params struct {
	// K1 is the term-frequency saturation constant.
	K1 float64
	// K3 saturates the weight of a term repeated in the query (BM25's
	// query-term frequency): a term found n times weighs
	// (K3+1)·n/(K3+n) times its weight once, at most K3+1 times; 0 counts
	// repeats once. A word a question says twice ("accepted answer …
	// another answer") or a Chinese character two of its words share is
	// more of its topic than a word said once, but not twice as much.
	K3 float64
	// B is the length-normalisation strength of every field whose FieldB
	// entry is zero.
	B float64
	// FieldWeight multiplies a field's normalised term frequency.
	FieldWeight [NumFields]float64
	// FieldB, when an entry is non-zero, overrides B for that field (use a
	// tiny positive value for "no normalisation").
	FieldB [NumFields]float64
	// PostingBudget bounds the postings Search reads: query terms are taken
	// rarest first and their postings read while the running sum of their
	// document frequencies stays within the budget (the rarest term is
	// always read). The remaining, common terms are scored only for the
	// RescoreDepth best candidates. Zero means no bound (exact BM25F).
	PostingBudget int64
	// RescoreDepth is how many candidates the common terms are scored for
	// when PostingBudget defers some terms (at least the k asked for).
	RescoreDepth int
	// IDFExponent raises every idf to this power (0 means 1). Below 1 it
	// flattens the idf curve, so that one rare word (a typo, a name) weighs
	// less against several ordinary ones: short queries paraphrase, and
	// their rarest word is not always their topic.
	IDFExponent float64
	// CJKWeight multiplies the idf of every CJK term, character or pair (0
	// means 1). A Chinese word of two characters becomes two characters and
	// their pairs (three terms' weight at CJKBigramWeight 0.5) where an
	// English word is one term, so in a query that mixes the two, the
	// English words (often the names that matter: "goroutine", "Redis")
	// would weigh a third of a Chinese word each; 1/3 weighs them alike. A
	// query in one script ranks and scores the same whatever the value:
	// all its weights scale together.
	CJKWeight float64
	// CJKBigramWeight multiplies the idf of CJK character-pair terms (0
	// means 1). Pairs also match across word boundaries and repeat the
	// evidence of the characters they are made of, so they weigh less than
	// independent words.
	CJKBigramWeight float64
	// CompoundWeight multiplies the idf of a compound's whole term, one
	// joined by '.', '/', '\\', ':', '-' or '_' ("import_module",
	// "pkg.func", "top-up"; 0 means 1). The analyzer emits the whole and
	// each of its parts, so a document holding the compound matches it
	// three times over; the whole adds the evidence of the exact form, not
	// that of another word. (A camelCase whole cannot be told from a word
	// once lower-cased, and keeps its full weight.) A query's compound
	// that holds groups of digits ("12.04", "127.0.0.1") is one token of
	// meaning too, and those groups, which on their own match any number,
	// weigh CompoundWeight as well.
	CompoundWeight float64
	// CJKCoord is the strength of the coordination factor for queries with
	// CJK text: a document's score is multiplied by min(1, 3c)^(CJKCoord·s),
	// where c is the fraction of the query's idf mass it matches and s the
	// share of that mass held by CJK terms, counted as if CJKWeight were 1
	// (0 for English-only queries, which are unaffected). Single characters carry little meaning on their
	// own, so a document matching a few strongly weighted characters of a
	// Chinese query is weaker evidence than its BM25 score says; one that
	// covers a third of the query is not penalised. 0 disables.
	CJKCoord float64
	// CJKCalibration bends the Relevance of queries with CJK text so that a
	// min_score threshold means the same as for English:
	// Relevance = (Score/Σw)^(1 − CJKCalibration·s), s as for CJKCoord
	// (English-only queries are unaffected). The map is
	// increasing, so it never changes the ranking within a query. A Chinese
	// paraphrase shares far fewer of the query's terms (characters and,
	// above all, character pairs) than an English one shares words, so its
	// raw fraction is much lower for the same meaning. 0 disables; values
	// above 0.9 count as 0.9.
	CJKCalibration float64
	// FunctionWordWeight is the weight, in Rerank, of a function word
	// (stop word) the query shares with a hit's question, relative to a
	// term found in half the documents (0: no re-rank). Function words are
	// not indexed: they re-order a search's final hits, never find one.
	FunctionWordWeight float64
}

// DefaultParams are the defaults tuned on the shared/eval dev sets (see
// cmd/memex-bench quality).
func DefaultParams() Params {
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
		// Half, as the other secondary evidence (a compound's whole, a
		// CJK pair) weighs half.
		FunctionWordWeight: 0.5,
	}
}

// repeatWeight is the factor of a term found n times in the query.
func (p Params) repeatWeight(n int) float64 {
	if n <= 1 || p.K3 <= 0 {
		return 1
	}
	return (p.K3 + 1) * float64(n) / (p.K3 + float64(n))
}

func (p Params) fieldB(f int) float64 {
	if p.FieldB[f] != 0 {
		return p.FieldB[f]
	}
	return p.B
}

// TermFreqReader is an optional Source capability: random access to the
// term frequencies of given documents. Search uses it to score deferred
// common terms (see Params.PostingBudget) for a few candidates without
// reading those terms' postings; without it, Search reads the postings and
// gets the same result more slowly.
type TermFreqReader interface {
	// TermFreqs calls fn once for each visible document of docs, in any
	// order, with tfs[i] the frequency of terms[i] in it (zero when absent)
	// and its field lengths. tfs is only valid during the call.
	TermFreqs(ctx context.Context, docs []uint64, terms []string, fn func(doc uint64, tfs []TF, lens [NumFields]uint32)) error
}

// cjkShare is s, the CJK share of a query whose terms weigh norm in all,
// cjk of it in CJK terms: the share of its weight in CJK terms as if
// CJKWeight were 1. Coordination and calibration make up for how few of a
// query's characters and pairs a Chinese paraphrase shares, which depends
// on how many such terms the query has, not on how they weigh against its
// English words. A query in one script has s exactly 0 or 1.
func (p Params) cjkShare(norm, cjk float64) float64 {
	if cjk <= 0 {
		return 0
	}
	c := cjk
	if p.CJKWeight > 0 {
		c /= p.CJKWeight
	}
	return c / (c + (norm - cjk))
}

// calibration returns the map of a query whose terms weigh norm in all,
// with CJK share s.
func (p Params) calibration(norm, s float64) calib {
	c := calib{norm: norm, exp: 1}
	if e := min(max(p.CJKCalibration, 0), 0.9); e > 0 && norm > 0 {
		c.exp = 1 - e*s
	}
	return c
}

// score is the least score whose Relevance is r (r in (0,1]): the inverse
// of of.
func (c calib) score(r float64) float64 {
	if c.exp != 1 {
		r = math.Pow(r, 1/c.exp)
	}
	return c.norm * r
}

func (c calib) of(score float64) float64 {
	if c.norm <= 0 {
		return 0
	}
	r := min(max(score/c.norm, 0), 1)
	if c.exp != 1 {
		r = math.Pow(r, c.exp)
	}
	return r
}
