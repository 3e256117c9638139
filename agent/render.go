package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
)

// Renderer prints events readably as they come: the agent's text as is,
// shell calls as "$ command", other tool calls as "→ Tool(path)", tool
// results as a status line with the first lines of output, and the final
// result once. Not safe for concurrent use. Write errors are ignored (the
// terminal going away must not stop a run).
type Renderer struct {
	w     io.Writer
	color bool

	turnText []string        // the texts printed since the last other event, so the result does not repeat them
	named    map[string]bool // tool ids of calls printed with their paths
	midLine  bool            // the last write did not end with a newline
	streamed bool            // a text event's content was already printed by Delta
	results  int
}

// NewRenderer returns a renderer writing to w, with ANSI colours when color
// is set.
func NewRenderer(w io.Writer, color bool) *Renderer {
	return &Renderer{w: w, color: color, named: map[string]bool{}}
}

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// Output lines shown under a tool result, and the width they are cut to.
const (
	resultLines = 3
	lineWidth   = 160
)

func (r *Renderer) paint(style, s string) string {
	if !r.color || s == "" {
		return s
	}
	return style + s + ansiReset
}

func (r *Renderer) write(s string) {
	if s == "" {
		return
	}
	_, _ = io.WriteString(r.w, s)
	r.midLine = !strings.HasSuffix(s, "\n")
}

// line writes s on a line of its own.
func (r *Renderer) line(s string) {
	if r.midLine {
		r.write("\n")
	}
	r.write(s + "\n")
}

// Delta prints a piece of assistant text as it streams; the text event that
// later carries the whole message is then not printed again.
func (r *Renderer) Delta(s string) {
	r.write(s)
	r.streamed = true
}

// Event prints e.
func (r *Renderer) Event(e core.Event) {
	if e.Kind != core.EventText && e.Kind != core.EventResult {
		r.turnText = r.turnText[:0]
	}
	switch e.Kind {
	case core.EventStart:
		parts := []string{"session"}
		if e.SessionID != "" {
			parts = append(parts, e.SessionID)
		}
		if e.Text != "" {
			parts = append(parts, "("+e.Text+")")
		}
		r.line(r.paint(ansiDim, "● "+strings.Join(parts, " ")))
	case core.EventText:
		if r.streamed {
			r.streamed = false
			if r.midLine {
				r.write("\n")
			}
		} else {
			r.line(strings.TrimRight(e.Text, "\n"))
		}
		r.turnText = append(r.turnText, e.Text)
	case core.EventReasoning:
		r.line(r.paint(ansiDim, "✻ "+firstLines(e.Text, resultLines, lineWidth)))
	case core.EventToolCall:
		if len(e.Paths) > 0 && e.ToolID != "" {
			r.named[e.ToolID] = true
		}
		if e.Command != "" {
			r.line(r.paint(ansiCyan+ansiBold, "$ "+cut(oneLine(clean(e.Command)), lineWidth)))
			return
		}
		r.line(r.paint(ansiCyan, "→ "+clean(e.Tool)+"("+cut(clean(callSubject(e)), lineWidth)+")"))
	case core.EventToolResult:
		status, style := "✓", ansiGreen
		if e.Failed() {
			status, style = "✗", ansiRed
		}
		if e.ExitCode != nil {
			status += fmt.Sprintf(" exit %d", *e.ExitCode)
		}
		if n := strings.Count(strings.TrimRight(e.Text, "\n"), "\n") + 1; e.Text != "" {
			status += fmt.Sprintf(" (%d line%s)", n, plural(n))
		}
		r.line("  " + r.paint(style, status))
		if out := strings.TrimLeft(strings.TrimRight(clean(e.Text), " \t\n"), "\n"); out != "" {
			for _, l := range strings.Split(firstLines(out, resultLines, lineWidth), "\n") {
				r.line(r.paint(ansiDim, "  │ "+l))
			}
		}
	case core.EventFileChange:
		if r.named[e.ToolID] {
			delete(r.named, e.ToolID)
			return // the call already named the file
		}
		r.line(r.paint(ansiCyan, "✎ "+clean(strings.Join(e.Paths, ", "))))
	case core.EventError:
		r.line(r.paint(ansiRed, "error: "+clean(e.Text)))
	case core.EventResult:
		r.results++
		if r.results > 1 {
			return
		}
		if text := strings.TrimSpace(e.Text); text != "" && words(text) != words(strings.Join(r.turnText, " ")) {
			r.line(text)
		}
		if e.OK != nil && !*e.OK {
			r.line(r.paint(ansiRed, "✗ failed"))
		}
	}
}

// callSubject names what a tool call works on: its path, else its first
// short string argument.
func callSubject(e core.Event) string {
	if len(e.Paths) > 0 {
		return strings.Join(e.Paths, ", ")
	}
	var args map[string]any
	if json.Unmarshal([]byte(e.Args), &args) != nil {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, pref := range []string{"file_path", "path", "pattern", "query", "url", "command", "description"} {
		if s, ok := args[pref].(string); ok && s != "" {
			return oneLine(s)
		}
	}
	for _, k := range keys {
		if s, ok := args[k].(string); ok && s != "" {
			return oneLine(s)
		}
	}
	return ""
}

// firstLines returns the first n lines of s, each cut to width, with a
// note of how many lines were left out.
func firstLines(s string, n, width int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	more := len(lines) - n
	if more > 0 {
		lines = lines[:n]
	}
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… %d more line%s", more, plural(more)))
	}
	return strings.Join(lines, "\n")
}

// ansiSeq matches terminal escape sequences (CSI and OSC).
var ansiSeq = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?)`)
})

// clean makes tool output safe to preview on a terminal: escape sequences
// are removed and other control characters (but tabs) become spaces.
func clean(s string) string {
	s = ansiSeq().ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' {
			return r
		}
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// cut shortens s to at most width runes, marking the cut.
func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	rs := []rune(s)
	return string(rs[:width-1]) + "…"
}

// words normalises white space, to compare texts however they were split.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
