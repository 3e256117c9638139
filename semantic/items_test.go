package semantic

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/plugins/inmem"
)

func TestItemsConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore {
		s, err := NewItems(inmem.New(), &fakeEmbedder{}, 0.5, NewCache(1000), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestItemsHybrid: a paraphrase the lexical search misses is found by its
// meaning; an embedder failure falls back to the lexical answer.
func TestItemsHybrid(t *testing.T) {
	inner := inmem.New()
	ns := core.Namespace{"user", "alice"}
	for k, text := range map[string]string{
		"rm":    "erase or drop",
		"tests": "prefers table-driven tests",
		"tabs":  "indents with tabs",
	} {
		v, _ := json.Marshal(map[string]string{"text": text})
		if _, err := inner.Put(t.Context(), core.PutRequest{Namespace: ns, Key: k, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	lex, err := inner.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "remove"})
	if err != nil || len(lex) != 0 {
		t.Fatalf("the lexical search finds %v, %v; want nothing (the test needs a paraphrase)", lex, err)
	}
	emb := &fakeEmbedder{}
	s, err := NewItems(inner, emb, 0.5, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "remove"})
	if err != nil || len(hits) != 1 || hits[0].Key != "rm" || hits[0].Score <= 0 {
		t.Fatalf("hybrid search = %+v, %v; want the rm note", hits, err)
	}
	emb.err = core.ErrUnavailable
	hits, err = s.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "table tests"})
	if err != nil || len(hits) != 1 || hits[0].Key != "tests" {
		t.Fatalf("with the embedder down: %+v, %v; want the lexical hit", hits, err)
	}
	if _, err := NewItems(inner, nil, 0.5, nil, nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("NewItems without an embedder: %v", err)
	}
}
