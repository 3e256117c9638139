// Package evalset owns memex's retrieval evaluation data: loading the
// shared/eval sets (corpus.jsonl + queries.dev.jsonl per folder), the
// ranking metrics (MRR@10, Recall@k, nDCG@10) and a deterministic synthetic
// corpus generator for latency benchmarks. It does not depend on retrieval:
// callers rank, evalset scores.
package evalset

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File names inside a set's folder.
const (
	CorpusFile  = "corpus.jsonl"
	QueriesFile = "queries.dev.jsonl"
)

// Record is one stored QA of a corpus.
type Record struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Lang     string `json:"lang,omitempty"`
	Source   string `json:"source,omitempty"`
}

// Query is one evaluation query with the ids of its relevant records.
type Query struct {
	ID        string   `json:"id"`
	Query     string   `json:"query"`
	QueryFull string   `json:"query_full,omitempty"`
	Relevant  []string `json:"relevant"`
	Lang      string   `json:"lang,omitempty"`
}

// Set is a named corpus with its queries.
type Set struct {
	Name    string
	Corpus  []Record
	Queries []Query
}

// Load reads the set in dir (its base name is the set's name).
func Load(dir string) (*Set, error) {
	s := &Set{Name: filepath.Base(dir)}
	if err := readJSONL(filepath.Join(dir, CorpusFile), func(r Record) error {
		if r.ID == "" {
			return errors.New("record without id")
		}
		s.Corpus = append(s.Corpus, r)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := readJSONL(filepath.Join(dir, QueriesFile), func(q Query) error {
		if q.ID == "" {
			return errors.New("query without id")
		}
		if len(q.Relevant) == 0 {
			return fmt.Errorf("query %s has no relevant ids", q.ID)
		}
		s.Queries = append(s.Queries, q)
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadAll loads every set under root: each sub-folder holding a corpus
// file, sorted by name.
func LoadAll(root string) ([]*Set, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var sets []*Set
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, CorpusFile)); err != nil {
			continue
		}
		s, err := Load(dir)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no evaluation set (folder with %s) under %s", CorpusFile, root)
	}
	slices.SortFunc(sets, func(a, b *Set) int { return strings.Compare(a.Name, b.Name) })
	return sets, nil
}

// ReadJSONL decodes one JSON value of type T per non-empty line of r.
func ReadJSONL[T any](r io.Reader, fn func(T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := fn(v); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return sc.Err()
}

func readJSONL[T any](path string, fn func(T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	if err := ReadJSONL(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadMixed reads a set whose QAs and queries share one JSONL file, one
// object per line with "kind" "qa" (id, question, answer) or "query" (id,
// query, relevant): the format of memex's hand-written sets, such as
// retrieval/testdata/zh_paraphrase.jsonl.
func LoadMixed(name, path string) (*Set, error) {
	type line struct {
		Kind     string   `json:"kind"`
		ID       string   `json:"id"`
		Question string   `json:"question"`
		Answer   string   `json:"answer"`
		Query    string   `json:"query"`
		Relevant []string `json:"relevant"`
	}
	s := &Set{Name: name}
	err := readJSONL(path, func(l line) error {
		switch l.Kind {
		case "qa":
			s.Corpus = append(s.Corpus, Record{ID: l.ID, Question: l.Question, Answer: l.Answer})
		case "query":
			if len(l.Relevant) == 0 {
				return fmt.Errorf("query %s without relevant ids", l.ID)
			}
			s.Queries = append(s.Queries, Query{ID: l.ID, Query: l.Query, Relevant: l.Relevant})
		default:
			return fmt.Errorf("%q: unknown kind %q (want qa or query)", l.ID, l.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}
