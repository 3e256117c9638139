package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memex-dev/memex/core"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestParseGolden parses every transcript under testdata/<format>/ and
// compares the events with <name>.golden.
func TestParseGolden(t *testing.T) {
	for _, f := range []Format{FormatClaude, FormatCodex, FormatGemini, FormatText} {
		files, err := filepath.Glob(filepath.Join("testdata", string(f), "*"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, in := range files {
			if strings.HasSuffix(in, ".golden") {
				continue
			}
			n++
			name := strings.TrimSuffix(filepath.Base(in), filepath.Ext(in))
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				evs := parseFile(t, f, in)
				got, err := json.MarshalIndent(evs, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				golden := strings.TrimSuffix(in, filepath.Ext(in)) + ".golden"
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("events differ from %s (-want +got):\n%s", golden, diff)
				}
			})
		}
		if n == 0 {
			t.Errorf("no transcripts for %s", f)
		}
	}
}

func parseFile(tb testing.TB, f Format, path string) []core.Event {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	evs, err := ParseStream(f, bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// kinds returns the events' kinds in order.
func kinds(evs []core.Event) []core.EventKind {
	var out []core.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func only(evs []core.Event, k core.EventKind) []core.Event {
	var out []core.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func okOf(e core.Event) string {
	if e.OK == nil {
		return "unset"
	}
	if *e.OK {
		return "ok"
	}
	return "failed"
}

// TestParseSemantics checks, by name, the behaviours the golden files pin
// down, so that a regression says what broke.
func TestParseSemantics(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		file   string
		check  func(t *testing.T, evs []core.Event)
	}{
		{"claude every assistant block is an event", FormatClaude, "claude/coding_task.jsonl", func(t *testing.T, evs []core.Event) {
			want := []core.EventKind{
				core.EventStart,
				core.EventReasoning, core.EventText, core.EventToolCall, core.EventToolResult,
				core.EventText, core.EventToolCall, core.EventToolResult, core.EventFileChange,
				core.EventToolCall, core.EventToolResult,
				core.EventText, core.EventResult,
			}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		}},
		{"claude result ok is not inverted", FormatClaude, "claude/coding_task.jsonl", func(t *testing.T, evs []core.Event) {
			r := only(evs, core.EventResult)
			if len(r) != 1 || okOf(r[0]) != "ok" || !strings.Contains(r[0].Text, "rounds half up") {
				t.Errorf("result = %+v, want one ok result with the final text", r)
			}
		}},
		{"claude error results fail", FormatClaude, "claude/api_error.jsonl", func(t *testing.T, evs []core.Event) {
			if r := only(evs, core.EventResult); len(r) != 1 || okOf(r[0]) != "failed" {
				t.Errorf("is_error result = %+v, want failed", r)
			}
		}},
		{"claude non-success subtype fails", FormatClaude, "claude/error_result.jsonl", func(t *testing.T, evs []core.Event) {
			if r := only(evs, core.EventResult); len(r) != 1 || okOf(r[0]) != "failed" {
				t.Errorf("error_max_turns result = %+v, want failed", r)
			}
		}},
		{"claude bash results carry the command and failure", FormatClaude, "claude/failing_command.jsonl", func(t *testing.T, evs []core.Event) {
			res := only(evs, core.EventToolResult)
			if len(res) != 4 {
				t.Fatalf("%d tool results, want 4", len(res))
			}
			if res[0].Command != "npm test" || okOf(res[0]) != "failed" || res[0].Tool != "Bash" {
				t.Errorf("first result = %+v, want failed npm test", res[0])
			}
			if okOf(res[1]) != "ok" || res[1].Command != "" {
				t.Errorf("write result = %+v, want ok without command", res[1])
			}
		}},
		{"claude only successful edits change files", FormatClaude, "claude/failing_command.jsonl", func(t *testing.T, evs []core.Event) {
			fc := only(evs, core.EventFileChange)
			if len(fc) != 1 || !cmp.Equal(fc[0].Paths, []string{"/home/dev/shop/src/tax.js"}) {
				t.Errorf("file changes = %+v, want only the Write of tax.js", fc)
			}
			calls := only(evs, core.EventToolCall)
			if !cmp.Equal(calls[2].Paths, []string{"/home/dev/shop/src/cart.js"}) {
				t.Errorf("failed Edit call paths = %v, want cart.js", calls[2].Paths)
			}
		}},
		{"claude parallel calls, multi-part results, plain lines", FormatClaude, "claude/multi_block.jsonl", func(t *testing.T, evs []core.Event) {
			if evs[0].Kind != core.EventText || evs[0].Raw != "line" || !strings.HasPrefix(evs[0].Text, "Warning:") {
				t.Errorf("first event = %+v, want the plain line as text", evs[0])
			}
			res := only(evs, core.EventToolResult)
			if len(res) != 4 || res[0].Text != "Found 2 files\ninternal/http/orders.go\ninternal/http/users.go" || res[0].Tool != "Grep" {
				t.Errorf("results = %+v", res)
			}
			fc := only(evs, core.EventFileChange)
			if len(fc) != 2 || fc[0].Paths[0] != "internal/http/orders.go" || fc[1].Paths[0] != "notebooks/latency.ipynb" {
				t.Errorf("file changes = %+v", fc)
			}
			if txt := only(evs, core.EventText); len(txt) != 4 {
				t.Errorf("%d texts, want 4 (line, 1 + 2 blocks)", len(txt))
			}
		}},
		{"claude session id on every event", FormatClaude, "claude/coding_task.jsonl", func(t *testing.T, evs []core.Event) {
			for _, e := range evs {
				if e.SessionID != "3f6a2c1e-8d4b-4e7a-9c21-5b0d7e9f1a42" {
					t.Fatalf("event %d session = %q", e.Seq, e.SessionID)
				}
			}
		}},
		{"codex command executions, file changes and final answer", FormatCodex, "codex/coding_task.jsonl", func(t *testing.T, evs []core.Event) {
			want := []core.EventKind{
				core.EventStart, core.EventReasoning,
				core.EventToolCall, core.EventToolResult,
				core.EventReasoning, core.EventFileChange,
				core.EventToolCall, core.EventToolResult,
				core.EventText, core.EventResult,
			}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			fc := only(evs, core.EventFileChange)[0]
			if len(fc.Paths) != 2 {
				t.Errorf("file change paths = %v", fc.Paths)
			}
			r := only(evs, core.EventResult)[0]
			if !strings.HasPrefix(r.Text, "Retry no longer sleeps") || okOf(r) != "ok" {
				t.Errorf("result = %+v", r)
			}
		}},
		{"codex failed commands", FormatCodex, "codex/failing_command.jsonl", func(t *testing.T, evs []core.Event) {
			res := only(evs, core.EventToolResult)
			if len(res) != 4 {
				t.Fatalf("%d results, want 4", len(res))
			}
			if *res[0].ExitCode != 127 || okOf(res[0]) != "failed" || !strings.Contains(res[0].Text, "command not found") {
				t.Errorf("lint result = %+v", res[0])
			}
			if res[1].Tool != "docs.search" || !strings.Contains(res[1].Text, "go install") {
				t.Errorf("mcp result = %+v", res[1])
			}
			// item 4 completed without a start: the call is still emitted.
			calls := only(evs, core.EventToolCall)
			if len(calls) != 4 || calls[3].Command != "bash -lc 'go vet ./...'" {
				t.Errorf("calls = %+v", calls)
			}
			if r := only(evs, core.EventResult); r[0].Text != "golangci-lint is not installed and `go vet` reports unreachable code in internal/api/server.go:88." {
				t.Errorf("result text = %q, want the last agent message", r[0].Text)
			}
		}},
		{"codex turn failure", FormatCodex, "codex/turn_failed.jsonl", func(t *testing.T, evs []core.Event) {
			if n := len(only(evs, core.EventError)); n != 3 {
				t.Errorf("%d errors, want 3", n)
			}
			if r := only(evs, core.EventResult); len(r) != 1 || okOf(r[0]) != "failed" {
				t.Errorf("result = %+v, want failed", r)
			}
		}},
		{"codex legacy envelopes", FormatCodex, "codex/legacy.jsonl", func(t *testing.T, evs []core.Event) {
			res := only(evs, core.EventToolResult)
			if len(res) != 3 || res[0].Command != "go test ./dates/..." || okOf(res[0]) != "failed" || okOf(res[2]) != "ok" {
				t.Errorf("results = %+v", res)
			}
			if fc := only(evs, core.EventFileChange); len(fc) != 1 || fc[0].Paths[0] != "/home/dev/cal/dates/parse.go" {
				t.Errorf("file changes = %+v", fc)
			}
			if r := only(evs, core.EventResult); len(r) != 1 || !strings.HasPrefix(r[0].Text, "TestParseISO passes") {
				t.Errorf("result = %+v", r)
			}
		}},
		{"gemini deltas joined per message, result kept", FormatGemini, "gemini/coding_task.jsonl", func(t *testing.T, evs []core.Event) {
			txt := only(evs, core.EventText)
			if len(txt) != 2 || txt[0].Text != "I'll read the slug helper first." {
				t.Errorf("texts = %+v", txt)
			}
			r := only(evs, core.EventResult)
			want := "`slug` now strips accents (`Crème Brûlée` → `creme-brulee`). The slug tests pass."
			if len(r) != 1 || r[0].Text != want || okOf(r[0]) != "ok" {
				t.Errorf("result = %+v, want the final turn's text", r)
			}
			calls := only(evs, core.EventToolCall)
			if calls[2].Command != "npx vitest run src/slug.test.ts" {
				t.Errorf("shell call = %+v", calls[2])
			}
			if fc := only(evs, core.EventFileChange); len(fc) != 1 || fc[0].Paths[0] != "/home/dev/blog/src/slug.ts" {
				t.Errorf("file changes = %+v", fc)
			}
		}},
		{"gemini failed tools", FormatGemini, "gemini/failing_command.jsonl", func(t *testing.T, evs []core.Event) {
			res := only(evs, core.EventToolResult)
			if len(res) != 3 || okOf(res[1]) != "failed" || res[1].Command != "npm run release:check" || !strings.Contains(res[1].Text, "missing script") {
				t.Errorf("results = %+v", res)
			}
			if fc := only(evs, core.EventFileChange); len(fc) != 1 || fc[0].Paths[0] != "/home/dev/blog/CHANGELOG.md" {
				t.Errorf("file changes = %+v, want only the successful write", fc)
			}
		}},
		{"gemini error result", FormatGemini, "gemini/error_result.jsonl", func(t *testing.T, evs []core.Event) {
			if n := len(only(evs, core.EventError)); n != 2 {
				t.Errorf("%d errors, want 2", n)
			}
			r := only(evs, core.EventResult)
			if len(r) != 1 || okOf(r[0]) != "failed" || r[0].Text != "Partial summary: 3 TODOs in src/" {
				t.Errorf("result = %+v", r)
			}
		}},
		{"gemini pending text flushed at the end", FormatGemini, "gemini/unfinished.jsonl", func(t *testing.T, evs []core.Event) {
			if txt := only(evs, core.EventText); len(txt) != 1 || txt[0].Text != "Thinking about the answer" {
				t.Errorf("texts = %+v", txt)
			}
		}},
		{"text lines and whole result", FormatText, "text/plain.txt", func(t *testing.T, evs []core.Event) {
			want := []core.EventKind{core.EventText, core.EventText, core.EventText, core.EventResult}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			if r := evs[len(evs)-1]; r.Text != "Building...\n\nDone: 3 files changed.\nresult: ok" {
				t.Errorf("result = %q", r.Text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := parseFile(t, tt.format, filepath.Join("testdata", tt.file))
			for i, e := range evs {
				if e.Seq != i {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			tt.check(t, evs)
		})
	}
}

func TestTextResultBounded(t *testing.T) {
	var in strings.Builder
	for i := range 20000 {
		in.WriteString(strings.Repeat("é", i%7) + "line\n")
	}
	in.WriteString("THE END\n")
	evs, err := ParseStream(FormatText, strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	r := evs[len(evs)-1]
	if r.Kind != core.EventResult || len(r.Text) > MaxFinalTextBytes || !strings.HasSuffix(r.Text, "THE END") {
		t.Errorf("result: kind %s, %d bytes, tail %q", r.Kind, len(r.Text), r.Text[max(0, len(r.Text)-20):])
	}
	if len(r.Text) < MaxFinalTextBytes-4 {
		t.Errorf("result kept %d bytes, want close to %d", len(r.Text), MaxFinalTextBytes)
	}
	if !json.Valid([]byte(`"` + strings.ReplaceAll(r.Text, "\n", `\n`) + `"`)) {
		t.Error("result is not valid UTF-8 text")
	}
}

func TestLongLines(t *testing.T) {
	t.Run("a 1 MiB JSON line parses whole", func(t *testing.T) {
		text := strings.Repeat("x", 1<<20)
		line, _ := json.Marshal(map[string]any{
			"type":    "assistant",
			"message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}},
		})
		evs, err := ParseStream(FormatClaude, bytes.NewReader(append(line, '\n')))
		if err != nil || len(evs) != 1 || evs[0].Text != text {
			t.Fatalf("got %d events, err %v", len(evs), err)
		}
	})
	t.Run("a line over the limit is cut, the next one kept", func(t *testing.T) {
		in := strings.Repeat("y", MaxLineBytes+100) + "\nnext\n"
		evs, err := ParseStream(FormatText, strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 3 || len(evs[0].Text) != MaxLineBytes || evs[1].Text != "next" {
			t.Fatalf("got %d events", len(evs))
		}
	})
	t.Run("last line without newline", func(t *testing.T) {
		evs, _ := ParseStream(FormatClaude, strings.NewReader(`{"type":"result","subtype":"success","result":"done"}`))
		if len(evs) != 1 || evs[0].Text != "done" {
			t.Fatalf("events = %+v", evs)
		}
	})
}

func TestOddJSON(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		line   string
		want   []core.EventKind
	}{
		{"claude unknown type ignored", FormatClaude, `{"type":"rate_limit","x":1}`, nil},
		{"claude wrong field type keeps the rest", FormatClaude, `{"type":"result","subtype":"success","is_error":"no","result":"r"}`, []core.EventKind{core.EventResult}},
		{"claude odd block skipped, others kept", FormatClaude, `{"type":"assistant","message":{"content":[{"type":"text","text":5},{"type":"text","text":"ok"}]}}`, []core.EventKind{core.EventText}},
		{"claude broken json is a plain line", FormatClaude, `{"type":"assistant"`, []core.EventKind{core.EventText}},
		{"claude blank line", FormatClaude, "   ", nil},
		{"codex json array is a plain line", FormatCodex, `[1,2]`, []core.EventKind{core.EventText}},
		{"codex item without item", FormatCodex, `{"type":"item.completed"}`, nil},
		{"gemini user message", FormatGemini, `{"type":"message","role":"user","content":"hi"}`, nil},
		{"gemini result without text", FormatGemini, `{"type":"result","status":"success"}`, []core.EventKind{core.EventResult}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewParser(tt.format)
			evs := append(p.Line([]byte(tt.line)), p.Finish()...)
			if diff := cmp.Diff(tt.want, kinds(evs)); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkParseClaude(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "claude", "coding_task.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseStream(FormatClaude, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
