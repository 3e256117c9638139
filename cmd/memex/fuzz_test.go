package main

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseImportLine: any line is parsed or rejected with a *lineError
// naming its line number; never a panic.
func FuzzParseImportLine(f *testing.F) {
	for _, s := range []string{
		`{"question": "q?", "answer": "a long enough answer"}`,
		`{"qa_id": "qa-1", "question": "q", "answer": "a", "tags": ["x"], "status": "verified"}`,
		`{"qa_id": "qa-1", "question": "q", "answer": "a", "trust_score": 0.5, "created_at": "2026-01-02T03:04:05Z"}`,
		`{"qa_id": "bad id!", "question": "q", "answer": "a", "usage_count": "x"}`,
		`{"question": 3}`, `[1,2]`, `{`, ``, `null`, `{"status": "nope", "question": "q", "answer": "a"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		l, err := parseImportLine("proj", 7, []byte(line), false)
		if err != nil {
			var le *lineError
			if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), "line 7: ") {
				t.Fatalf("error %v is not a line-7 *lineError", err)
			}
			return
		}
		if l.full != nil && (l.full.ProjectID != "proj" || l.full.QAID == "") {
			t.Fatalf("full record not in the project or without id: %+v", l.full)
		}
		if l.cand != nil {
			if err := l.cand.Validate(); err != nil {
				t.Fatalf("accepted an invalid candidate: %v", err)
			}
		}
	})
}

// FuzzConfigFile: any file is applied or rejected with an error naming the
// file; never a panic.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"[memory]\ntimeout = \"2s\"\nsearch_limit = 6\n",
		"[gatekeeper]\nprofile = \"compat\"\nmax_inject = 2\n",
		"[run]\nbackend = \"codex\"\n[trust]\nhalf_life = \"90d\"\n",
		"[memory]\nstore = \n", "[memroy]\nx = 1\n", "a.b.c = 1\n[[x]]\n", "[memory]\ntimeout = 5\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg := DefaultConfig()
		if err := applyFile(&cfg, "fuzz.toml", []byte(text)); err != nil && !strings.Contains(err.Error(), "fuzz.toml") {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}
