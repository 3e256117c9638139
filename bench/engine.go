package bench

import (
	"context"

	"github.com/memex-dev/memex/retrieval"
)

// Engine is one search engine under comparison. Documents are identified by
// their position in the slice given to Build.
type Engine interface {
	// Name is the engine's label in the tables.
	Name() string
	// Build indexes docs; it is called once.
	Build(docs []Record) error
	// Search returns the positions of up to k documents, best first. It
	// must be safe for concurrent use after Build.
	Search(query string, k int) ([]int, error)
	// DiskBytes is the size of the engine's files (0 for in-memory engines).
	DiskBytes() int64
	// Close releases the engine's resources and files.
	Close() error
}

// Factory makes a fresh, empty engine.
type Factory struct {
	Name string
	New  func() (Engine, error)
}

// Factories are the engines compared, memex first.
func Factories() []Factory {
	return []Factory{
		{"memex", func() (Engine, error) { return NewMemex(), nil }},
		{"bleve-default", func() (Engine, error) { return NewBleve(false) }},
		{"bleve-tuned", func() (Engine, error) { return NewBleve(true) }},
		{"sqlite-fts5", func() (Engine, error) { return NewFTS5(false) }},
		{"sqlite-fts5-stop", func() (Engine, error) { return NewFTS5(true) }},
	}
}

// Memex is memex's in-process retrieval engine, as its stores use it:
// retrieval.Analyzer, retrieval.MemIndex and retrieval.Scorer with
// DefaultParams, the final hits re-ranked by the query's function words
// in their questions (Scorer.Rerank, as the stores do with the records
// they answer with); each question's set of function words is found when
// it is indexed.
type Memex struct {
	idx   *retrieval.MemIndex
	sc    *retrieval.Scorer
	words []retrieval.FunctionWords
}

// NewMemex returns an empty memex engine.
func NewMemex() *Memex {
	a := retrieval.NewAnalyzer()
	return &Memex{idx: retrieval.NewMemIndex(a), sc: retrieval.NewScorer(a, retrieval.DefaultParams())}
}

func (m *Memex) Name() string { return "memex" }

func (m *Memex) Build(docs []Record) error {
	m.words = make([]retrieval.FunctionWords, len(docs))
	for i, d := range docs {
		m.idx.Add(uint64(i), d.Question, d.Answer)
		m.words[i] = retrieval.FunctionWordsOf(d.Question)
	}
	return nil
}

func (m *Memex) Search(query string, k int) ([]int, error) {
	hits, err := m.sc.SearchRerank(context.Background(), m.idx, query, k, func(doc uint64) retrieval.FunctionWords { return m.words[doc] })
	if err != nil {
		return nil, err
	}
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = int(h.Doc)
	}
	return out, nil
}

func (m *Memex) DiskBytes() int64 { return 0 }
func (m *Memex) Close() error     { return nil }
