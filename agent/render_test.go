package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/memex-dev/memex/core"
)

// TestRenderGolden renders every JSON transcript without colour and compares
// the output with testdata/render/<format>_<name>.txt.
func TestRenderGolden(t *testing.T) {
	for _, f := range []Format{FormatClaude, FormatCodex, FormatGemini} {
		files, _ := filepath.Glob(filepath.Join("testdata", string(f), "*.jsonl"))
		for _, in := range files {
			name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				var buf bytes.Buffer
				r := NewRenderer(&buf, false)
				for _, e := range parseFile(t, f, in) {
					r.Event(e)
				}
				golden := filepath.Join("testdata", "render", string(f)+"_"+name+".txt")
				if *update {
					_ = os.MkdirAll(filepath.Dir(golden), 0o755)
					if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), buf.String()); diff != "" {
					t.Errorf("rendering differs from %s (-want +got):\n%s", golden, diff)
				}
			})
		}
	}
}

func TestRenderer(t *testing.T) {
	ok, failed, exit2 := ptr(true), ptr(false), ptr(2)
	tests := []struct {
		name  string
		color bool
		evs   []core.Event
		want  string
	}{
		{"shell call and failing result", false, []core.Event{
			{Kind: core.EventToolCall, ToolID: "1", Tool: "Bash", Command: "make test"},
			{Kind: core.EventToolResult, ToolID: "1", Text: "a\nb\nc\nd\ne\n", OK: failed, ExitCode: exit2},
		}, "$ make test\n  ✗ exit 2 (5 lines)\n  │ a\n  │ b\n  │ c\n  │ … 2 more lines\n"},
		{"other tool call shows its path", false, []core.Event{
			{Kind: core.EventToolCall, ToolID: "2", Tool: "Read", Args: `{"file_path":"/a/b.go","limit":20}`},
			{Kind: core.EventToolCall, ToolID: "3", Tool: "Grep", Args: `{"pattern":"TODO"}`},
		}, "→ Read(/a/b.go)\n→ Grep(TODO)\n"},
		{"file change after its own call is not repeated", false, []core.Event{
			{Kind: core.EventToolCall, ToolID: "4", Tool: "Edit", Paths: []string{"x.go"}},
			{Kind: core.EventToolResult, ToolID: "4", OK: ok},
			{Kind: core.EventFileChange, ToolID: "4", Paths: []string{"x.go"}},
			{Kind: core.EventFileChange, ToolID: "5", Paths: []string{"y.go", "z.go"}},
		}, "→ Edit(x.go)\n  ✓\n✎ y.go, z.go\n"},
		{"result repeats no text and prints once", false, []core.Event{
			{Kind: core.EventText, Text: "All done."},
			{Kind: core.EventResult, Text: "All done.", OK: ok},
			{Kind: core.EventResult, Text: "Again", OK: ok},
		}, "All done.\n"},
		{"result with new text and failure", false, []core.Event{
			{Kind: core.EventResult, Text: "Partial.", OK: failed},
		}, "Partial.\n✗ failed\n"},
		{"start names the session and model", false, []core.Event{
			{Kind: core.EventStart, SessionID: "s1", Text: "gemini-2.5-pro"},
		}, "● session s1 (gemini-2.5-pro)\n"},
		{"tool output cannot drive the terminal", false, []core.Event{
			{Kind: core.EventToolResult, Text: "\x1b[31mFAIL\x1b[0m x\r\x1b]0;title\x07\x00y", OK: failed},
		}, "  ✗ (1 line)\n  │ FAIL x  y\n"},
		{"colour", true, []core.Event{
			{Kind: core.EventError, Text: "boom"},
		}, "\x1b[31merror: boom\x1b[0m\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := NewRenderer(&buf, tt.color)
			for _, e := range tt.evs {
				r.Event(e)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRendererDelta(t *testing.T) {
	var buf bytes.Buffer
	r := NewRenderer(&buf, false)
	r.Event(core.Event{Kind: core.EventToolCall, Tool: "ls", Command: "ls"})
	r.Delta("Hello ")
	r.Delta("world")
	r.Event(core.Event{Kind: core.EventText, Text: "Hello world"})
	r.Event(core.Event{Kind: core.EventResult, Text: "Hello world"})
	if want := "$ ls\nHello world\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}
