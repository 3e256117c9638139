// Package retrieval owns memex's lexical relevance: tokenisation (English
// words with stemming, CJK text, code identifiers, paths, error strings) and
// BM25F scoring over the question (boosted) and answer fields, normalised to
// [0,1]. Every backend indexes with Analyze and ranks with Scorer.Search over
// its own postings (the Source interface), so the same query over the same
// records ranks the same everywhere.
//
// # Scoring
//
// For a query with distinct terms q and a document d, with N visible
// documents and df(t) the documents containing t:
//
//	idf(t)    = ln(1 + (N − df + 0.5)/(df + 0.5))
//	w(t)      = u(t) · idf(t)^p                       (p = IDFExponent;
//	                                                    u = CJKBigramWeight for
//	                                                    a CJK character pair,
//	                                                    CompoundWeight for the
//	                                                    whole of a compound such
//	                                                    as "import_module"
//	                                                    or a digit group of
//	                                                    one in the query ("12"
//	                                                    of "12.04"), else 1;
//	                                                    times CJKWeight
//	                                                    for every CJK term)
//	                  · (k3+1)·n(t)/(k3+n(t))          (n(t) = times the query
//	                                                    has t; k3 = K3)
//	tf'(t,d)  = Σ_f w_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d)/avglen_f)
//	sat(t,d)  = tf' / (tf' + k1)                      ∈ [0,1)
//	cov(d)    = Σ_{t ∈ q∩d} w(t) / Σ_{t ∈ q} w(t)
//	coord(d)  = min(1, 3·cov(d))^(CJKCoord · s)        (s = CJK share of Σ w,
//	                                                    as if CJKWeight were 1)
//	Score     = coord(d) · Σ_{t ∈ q∩d} w(t) · sat(t,d)
//	r(d)      = Score / Σ_{t ∈ q} w(t)                 ∈ [0,1)
//	Relevance = r(d)^(1 − CJKCalibration · s)          ∈ [0,1)
//
// r is the weighted fraction of the query a document covers, discounted by
// saturation: it depends only on the collection statistics, never on the
// other hits, so a min_score threshold (0.2 by default) means the same on
// every backend and for every query length. A query term found in no
// document still counts in the denominator (a query about something the
// memory has never seen is not a strong match). With DefaultParams a
// document whose question contains every query term once, at average
// length, has r ≈ 0.59; one covering half the query's weight ≈ 0.29.
// A term the query repeats weighs more, with diminishing returns (BM25's
// query-term frequency: at most k3+1 times; 1.5 times for a term said twice
// with K3 = 2). Hits rank by Score, ties by lower Doc.
//
// The analyzer drops English function words ("how", "why", "can", …),
// which are not indexed; they still tell what a question asks about its
// topic. Every caller re-ranks the hits it answers with by the function
// words the query shares with their questions (Scorer.Rerank: a store on
// the records it read, RankItems on the keys): a hit sharing them gains
// relevance, one sharing none keeps it.
//
// For an English-only query s = 0 and Relevance = r. A Chinese paraphrase
// shares far fewer of the query's terms than an English one (it matches
// some characters, few character pairs: about 40% and 14% of their weight
// on the Chinese test set, against 60–80% of an English query's words), so
// r of the right answer is about 0.14 in Chinese against 0.34–0.50 in
// English. The calibration exponent (1 − 0.45·s, 0.55 for a purely Chinese
// query) is increasing in r, so it never changes the ranking within a
// query, and brings Chinese Relevance to the English scale. Medians with
// DefaultParams (retrieval's TestCalibrationTable): a full match (a
// document's own question) 0.65 in English, 0.73 in Chinese; the first
// relevant hit 0.34–0.50 in English, 0.33 in Chinese; the top hit of an
// off-topic query 0.15 in English, 0.12 in Chinese. At min_score 0.2 the
// right answer passes for 55–94% of English and 86% of Chinese queries, an
// off-topic query's top hit for 10–13% and 3%.
//
// The idf exponent (0.8) flattens idf so that one rare word does not
// outweigh several ordinary ones. The whole of a compound weighs half: the
// analyzer also emits its parts ("import_module" → import_module, import,
// modul), so a document holding it matches three terms for one token, and
// at full weight the whole's high idf (compounds are rare) would outrank
// documents that share more of the query's words. The digit groups of a
// query's compound weigh half too: "ubuntu 12.10" is about one version,
// not about the numbers 12 and 10, which on their own match "12 GB" and
// "Windows 10". For Chinese (and other
// CJK text, indexed as characters and character pairs) pairs weigh half,
// since they repeat the evidence of their characters and also span word
// boundaries, and the coordination factor discounts documents that match
// less than a third of the query: single characters are weak evidence on
// their own. Every CJK term weighs a third (CJKWeight), so that a
// two-character Chinese word (two characters and their pairs) weighs as
// much as an English word in a query that mixes them ("goroutine 越来越多");
// a query in one script is unaffected. For an English-only query s = 0 and
// coord = 1.
//
// # Cost
//
// Search reads only the postings of the query's terms, rarest first. With
// Params.PostingBudget set, it stops reading postings once the budget is
// spent and scores the remaining (common, low-idf) terms only for the
// RescoreDepth best candidates, through TermFreqReader when the Source has
// it; the cost of a search is then bounded whatever the corpus size.
// DefaultParams' budget (4,096 postings) leaves the ranking exact, or
// nearly, on corpora up to about ten thousand documents; at 100k it costs
// 0.3 % of MRR (see docs/PERFORMANCE.md).
//
// SearchMin takes the relevance floor the caller will apply anyway
// (min_score): a document matching only terms whose weights sum below the
// floor's score cannot pass, so the commonest such terms are deferred like
// budget-deferred ones, and while the deferred terms are scored (one at a
// time on a Source that walks a list per term, TermFreqsPerTerm) the
// candidates that can no longer pass or reach the top k are dropped
// (MaxScore). Long prompts gain most: their many common words weigh
// little against the floor.
package retrieval

import (
	"context"
)

// Fields of a QA document.
const (
	FieldQuestion = 0
	FieldAnswer   = 1
	NumFields     = 2
)

// TF is a term's frequency in each field.
type TF [NumFields]uint32

// Doc is an analysed document: term frequencies per field and field lengths
// (in terms).
type Doc struct {
	Terms map[string]TF
	Len   [NumFields]uint32
}

// Posting is one document that contains a term.
type Posting struct {
	Doc uint64
	TF  TF
	Len [NumFields]uint32
}

// Stats are collection statistics of the visible documents.
type Stats struct {
	Docs     int64
	TotalLen [NumFields]int64
}

// Source is an inverted index as a store exposes it to the scorer,
// restricted to the documents visible to one query (a project, global and
// the QAs shared with it). Implementations must not scan documents: they
// read postings of the asked terms only.
type Source interface {
	Stats(ctx context.Context) (Stats, error)
	// DocFreq is the number of visible documents containing term.
	DocFreq(ctx context.Context, term string) (int64, error)
	// Postings calls fn for each posting of term, in any order, until fn
	// returns false.
	Postings(ctx context.Context, term string, fn func(Posting) bool) error
}

// PostingScanner is an optional Source capability: a term's postings in
// blocks, without a call per posting. The scorer uses it, when a Source
// has it, instead of Postings for every list it reads.
//
// A type that embeds a PostingScanner and overrides Postings (to filter
// the documents a query sees, say) must override ScanPostings too, or the
// promoted ScanPostings bypasses its filter. For that reason *MemIndex,
// which tests embed to wrap Postings, keeps its block scan unexported: the
// scorer uses it only for a *MemIndex itself.
type PostingScanner interface {
	// ScanPostings calls fn with consecutive blocks of the postings of
	// term: together exactly the postings Postings gives, each once, in any
	// order. fn must neither keep nor modify a block after it returns. The
	// scan checks ctx between blocks and returns ctx.Err() if it is
	// cancelled.
	ScanPostings(ctx context.Context, term string, fn func([]Posting)) error
}

// Hit is a scored document.
type Hit struct {
	Doc uint64
	// Score is the raw BM25F score (ranking); Relevance is normalised to [0,1].
	Score     float64
	Relevance float64
}
