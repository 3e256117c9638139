//go:build integration

// The integration tier (docs/TESTING.md): the import of whole development
// corpora (thousands of lines each).

package main

import (
	"path/filepath"
	"testing"
)

// evalDir is the retrieval development data beside the repository, when
// it is there (it is not in CI).
const evalDir = "../../../shared/eval"

// TestQAImportEvalCorporaKeepEveryRecord is TestQAImportCorpusKeepsEveryRecord
// over every corpus.jsonl of ../shared/eval (near-duplicates and
// paraphrases by the thousand), and over the committed sample where that
// folder is missing.
func TestQAImportEvalCorporaKeepEveryRecord(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(evalDir, "*", "corpus.jsonl"))
	if len(files) == 0 {
		t.Logf("%s not found: the committed sample only", evalDir)
		files = []string{filepath.Join("testdata", "import-corpus.jsonl")}
	}
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file)), func(t *testing.T) {
			importCorpusKeepsEveryRecord(t, file)
		})
	}
}
