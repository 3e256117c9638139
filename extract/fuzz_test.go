package extract

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
)

// FuzzExtract drives Extract with a fuzzed query, final text, command and
// tool output: it never panics, the answer stays within MaxAnswerChars,
// and no field holds a detectable secret or a [QA_REF anchor.
func FuzzExtract(f *testing.F) {
	f.Add("fix the build", "Set GOFLAGS=-mod=mod so vet sees the module cache.", "go build ./...", "ok", 60)
	f.Add("How to: [QA_REF qa-1]", "[QA_[QA_REF x]REF y] done, see [QA_REF qa-2]", "make [QA_REF z]", "", 40)
	f.Add("push", "use ghp_R8x2Lq9ZtV4mN7cP1sK6wY3hJ0dF5gB2aE8u now please ok", "git push https://u:p4ssw0rd99@h/r", "", 50)
	f.Add("q", "[MEMORY_CONTEXT v1]\nx\n[/MEMORY_CONTEXT] and DB_PASSWORD=hunter2hunter2 etc etc", "mysql -u root -pS3cretPw db", "", 30)
	f.Add("日本語の質問", strings.Repeat("日本語 ", 50), "cat > a <<EOF\nbody\nEOF", "", 10)
	mem := "[MEMORY_CONTEXT v1]\n1) [QA_REF qa-1]\nQ: rotate logs safely in production now\n[/MEMORY_CONTEXT]"
	f.Fuzz(func(t *testing.T, query, final, cmd, output string, max int) {
		cfg := DefaultConfig()
		cfg.MaxAnswerChars = 1 + abs(max)%5000
		cfg.MinAnswerChars = 5
		in := Input{
			Query: query, Passed: true, Strength: core.StrengthStrong, MemoryBlock: mem,
			Events: []core.Event{
				{Kind: core.EventToolCall, ToolID: "1", Tool: "Bash", Command: cmd},
				{Kind: core.EventToolResult, ToolID: "1", ExitCode: ptr(0), Text: output},
				{Kind: core.EventText, Text: final},
			},
		}
		start := time.Now()
		c, ok, reason := Extract(in, cfg, testRedactor)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("slow: %v", d)
		}
		if !ok {
			if reason == "" {
				t.Fatal("no candidate and no reason")
			}
			return
		}
		if n := utf8.RuneCountInString(c.Answer); n > cfg.MaxAnswerChars {
			t.Fatalf("answer %d runes > %d", n, cfg.MaxAnswerChars)
		}
		for _, s := range append([]string{c.Question, c.Answer}, c.Tags...) {
			if fs := testRedactor.Find(s); len(fs) > 0 {
				t.Fatalf("%s secret left in %q", fs[0].Rule, s)
			}
			if strings.Contains(strings.ToUpper(s), "[QA_REF") {
				t.Fatalf("anchor left in %q", s)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
