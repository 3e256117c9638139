// Package retrieval owns memex's lexical relevance: tokenisation (English
// words with stemming, CJK text, code identifiers, paths, error strings) and
// BM25F scoring over the question (boosted) and answer fields, normalised to
// [0,1]. Every backend indexes with Analyze and ranks with Scorer.Search over
// its own postings (the Source interface), so the same query over the same
// records ranks the same everywhere.
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

// Hit is a scored document.
type Hit struct {
	Doc uint64
	// Score is the raw BM25F score (ranking); Relevance is normalised to [0,1].
	Score     float64
	Relevance float64
}
