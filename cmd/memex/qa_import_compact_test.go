package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/plugins/embedded"
)

// TestQAImportCompactsTheStore: memex qa import gives back the pages its
// transactions leave free in the embedded store's file (bbolt never
// shrinks it), so that afterwards there is nothing worth compacting.
func TestQAImportCompactsTheStore(t *testing.T) {
	c := newCLI(t)
	var in strings.Builder
	for _, r := range coretest.Corpus(1500, "test", 1) {
		line, err := json.Marshal(map[string]string{"qa_id": r.QAID, "question": r.Question, "answer": r.Answer})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(line, '\n'))
	}
	c.mustRun(in.String(), "qa", "import", "-")
	s, err := embedded.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if did, err := s.Compact(t.Context()); err != nil || did {
		t.Errorf("Compact after memex qa import = %v, %v; want false (compacted by the import)", did, err)
	}
}
