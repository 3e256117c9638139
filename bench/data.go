package bench

import (
	"errors"
	"fmt"
	"github.com/memex-dev/memex/evalset"
	"os"
	"path/filepath"
)

// Record is one QA of a corpus (memex's evalset record).
type Record = evalset.Record

// Query is one evaluation query with the ids of its relevant records.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// Set is a named corpus with its queries.
type Set struct {
	Name    string
	Corpus  []Record
	Queries []Query
}

// LoadEvalSet reads a shared/eval folder: corpus.jsonl and queries.dev.jsonl.
// The folder's base name is the set's name.
func LoadEvalSet(dir string) (*Set, error) {
	s := &Set{Name: filepath.Base(dir)}
	if err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(r Record) error {
		if r.ID == "" {
			return errors.New("record without id")
		}
		s.Corpus = append(s.Corpus, r)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := readJSONL(filepath.Join(dir, "queries.dev.jsonl"), func(q Query) error {
		if q.ID == "" || len(q.Relevant) == 0 {
			return fmt.Errorf("query %q without id or relevant ids", q.ID)
		}
		s.Queries = append(s.Queries, q)
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadMixedSet reads a single JSONL file whose lines are either QAs
// ({"kind":"qa","id","question","answer"}) or queries
// ({"kind":"query","id","query","relevant"}), the format of memex's
// retrieval/testdata/zh_paraphrase.jsonl.
func LoadMixedSet(name, path string) (*Set, error) {
	m, err := evalset.LoadMixed(name, path)
	if err != nil {
		return nil, err
	}
	if len(m.Corpus) == 0 || len(m.Queries) == 0 {
		return nil, fmt.Errorf("%s: %d QAs and %d queries, want both", path, len(m.Corpus), len(m.Queries))
	}
	s := &Set{Name: name, Corpus: m.Corpus}
	for _, q := range m.Queries {
		s.Queries = append(s.Queries, Query{ID: q.ID, Query: q.Query, Relevant: q.Relevant})
	}
	return s, nil
}

// SyntheticSet returns a deterministic synthetic corpus of n QAs and nq
// queries (no relevance judgements: for speed only).
func SyntheticSet(n, nq int, seed uint64) *Set {
	g := NewSynthetic(seed)
	s := &Set{Name: fmt.Sprintf("synthetic-%d", n), Corpus: make([]Record, n)}
	for i := range n {
		s.Corpus[i] = g.Record(i)
	}
	for i := range nq {
		s.Queries = append(s.Queries, Query{ID: fmt.Sprintf("sq-%d", i), Query: g.Query()})
	}
	return s
}

func readJSONL[T any](path string, fn func(T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := evalset.ReadJSONL(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
