package extract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/extract/redact"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenResult is what a golden file holds: Extract's three results.
type goldenResult struct {
	OK        bool       `json:"ok"`
	Reason    string     `json:"reason,omitempty"`
	Candidate *Candidate `json:"candidate,omitempty"`
}

// readEvents reads normalised events from a file holding either a JSON
// array of core.Event or one core.Event per line (JSONL).
func readEvents(tb testing.TB, path string) []core.Event {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var evs []core.Event
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &evs); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		return evs
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e core.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			tb.Fatalf("%s:%d: %v", path, n, err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return evs
}

// CheckGolden runs Extract on events (with in's other fields) and compares
// the result with the golden file, rewriting it under -update. It also
// checks the invariants every candidate must hold whatever the golden file
// says (checkInvariants). Reusable for events parsed from raw backend
// output: parse, then call CheckGolden with the parser's events.
func CheckGolden(t *testing.T, golden string, events []core.Event, in Input, cfg Config, r *redact.Redactor) {
	t.Helper()
	in.Events = events
	c, ok, reason := Extract(in, cfg, r)
	got := goldenResult{OK: ok, Reason: reason}
	if ok || len(c.Findings) > 0 {
		got.Candidate = &c
	}
	checkInvariants(t, in, cfg, r, c, ok)
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(b)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
	}
}

// checkInvariants: no secret, no anchor, no memory block, bounded answer,
// no tool output or file content copied in.
func checkInvariants(tb testing.TB, in Input, cfg Config, r *redact.Redactor, c Candidate, ok bool) {
	tb.Helper()
	cfg = cfg.normalized()
	if !ok {
		if c.Question != "" || c.Answer != "" {
			tb.Errorf("no candidate, but text returned")
		}
		return
	}
	if !in.Passed || in.Covered {
		tb.Errorf("candidate from a run that failed or is covered")
	}
	fields := append([]string{c.Question, c.Answer}, c.Tags...)
	mdb, _ := json.Marshal(c.Metadata)
	fields = append(fields, string(mdb))
	for i, f := range fields {
		if fs := r.Find(f); len(fs) > 0 {
			tb.Errorf("field %d holds a %s secret", i, fs[0].Rule)
		}
		if strings.Contains(strings.ToUpper(f), "[QA_REF") {
			tb.Errorf("field %d holds a QA_REF anchor", i)
		}
		if strings.Contains(f, "[MEMORY_CONTEXT") && !c.Quarantined {
			tb.Errorf("field %d holds a memory block but is not quarantined", i)
		}
	}
	if n := utf8.RuneCountInString(c.Answer); n > cfg.MaxAnswerChars {
		tb.Errorf("answer has %d runes > %d", n, cfg.MaxAnswerChars)
	}
	for _, e := range in.Events {
		if e.Kind == core.EventToolResult && len(e.Text) >= 80 && strings.Contains(c.Answer, e.Text) {
			tb.Errorf("answer holds a tool output (event %d)", e.Seq)
		}
		if e.Kind == core.EventToolCall && len(e.Args) >= 200 {
			var m map[string]any
			if json.Unmarshal([]byte(e.Args), &m) == nil {
				if content, _ := m["content"].(string); len(content) >= 80 && strings.Contains(c.Answer, content[:80]) {
					tb.Errorf("answer holds file content (event %d)", e.Seq)
				}
			}
		}
	}
	if in.MemoryBlock != "" {
		for _, l := range strings.Split(in.MemoryBlock, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 24 && strings.Contains(c.Answer, l) {
				tb.Errorf("answer holds a memory block line %q", l)
			}
		}
	}
}

func TestGoldenTranscripts(t *testing.T) {
	dir := filepath.Join("testdata", "transcripts")
	r := redact.New()
	block, err := os.ReadFile(filepath.Join(dir, "claude_memory_echo.memory.txt"))
	if err != nil {
		t.Fatal(err)
	}
	strict := DefaultConfig()
	strict.StrictSecretBlock = true
	tests := []struct {
		name       string // golden file name
		transcript string
		in         Input
		cfg        Config
	}{
		{"claude_tests_pass", "claude_tests_pass", Input{
			Query:  "How to:  fix the flaky\n  TestHandlerTimeout in internal/server?",
			Passed: true, Strength: core.StrengthStrong}, DefaultConfig()},
		{"codex_secret", "codex_secret", Input{
			Query:  "cut the v1.4.0 release with generated notes",
			Passed: true, Strength: core.StrengthMedium}, DefaultConfig()},
		{"codex_secret_strict", "codex_secret", Input{
			Query:  "cut the v1.4.0 release with generated notes",
			Passed: true, Strength: core.StrengthMedium}, strict},
		{"gemini_failing", "gemini_failing", Input{
			Query:  "fix the leap-day failure in tests/test_parser.py",
			Passed: false, Strength: core.StrengthStrong}, DefaultConfig()},
		{"claude_memory_echo", "claude_memory_echo", Input{
			Query:       "rotate the nginx logs without restarting nginx",
			Passed:      true,
			Strength:    core.StrengthMedium,
			MemoryBlock: string(block)}, DefaultConfig()},
		{"claude_memory_echo_covered", "claude_memory_echo", Input{
			Query:   "rotate the nginx logs without restarting nginx",
			Passed:  true,
			Covered: true}, DefaultConfig()},
		{"claude_huge_write", "claude_huge_write", Input{
			Query:  "generate the lookup tables into gen/tables.go",
			Passed: true, Strength: core.StrengthStrong, VerifyPassed: true}, DefaultConfig()},
		{"codex_instruction", "codex_instruction", Input{
			Query:  "make the npm tests pass",
			Passed: true, Strength: core.StrengthStrong}, DefaultConfig()},
		{"gemini_verify_pass", "gemini_verify_pass", Input{
			Query:  "why does the ETL pipeline reorder rows with equal ids between runs?",
			Passed: true, Strength: core.StrengthStrong, VerifyPassed: true}, DefaultConfig()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := readEvents(t, filepath.Join(dir, tt.transcript+".jsonl"))
			CheckGolden(t, filepath.Join(dir, tt.name+".golden"), evs, tt.in, tt.cfg, r)
		})
	}
}
