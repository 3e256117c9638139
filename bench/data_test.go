package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadMixedSet(t *testing.T) {
	s, err := LoadMixedSet("zh", "../retrieval/testdata/zh_paraphrase.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Corpus) != 90 || len(s.Queries) != 57 {
		t.Errorf("%d QAs and %d queries, want 90 and 57", len(s.Corpus), len(s.Queries))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"kind":"qa","id":"a","question":"q"}`+"\n"+`{"kind":"query","id":"q1","query":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMixedSet("bad", bad); err == nil {
		t.Error("query without relevant ids accepted")
	}
	if _, err := LoadEvalSet(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing set accepted")
	}
}
