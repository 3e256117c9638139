// Package agent runs an agent backend (the claude, codex or gemini CLI, or
// any command) with a prompt on stdin, streams its output live in a readable
// form, and parses every content block of every event into core.Event.
package agent

import (
	"bufio"
	"context"
	"io"
	"time"

	"github.com/memex-dev/memex/core"
)

// Format is a backend's output format.
type Format string

const (
	FormatClaude Format = "claude" // claude -p --output-format stream-json --verbose
	FormatCodex  Format = "codex"  // codex exec --json
	FormatGemini Format = "gemini" // gemini -p -o stream-json
	FormatText   Format = "text"   // any other command: plain text
)

// Parser turns output lines of one format into events. Not safe for
// concurrent use; one per run.
type Parser struct {
	f   Format
	seq int
}

// NewParser returns a parser for f.
func NewParser(f Format) *Parser { return &Parser{f: f} }

// Line parses one output line. PLACEHOLDER: every line is agent text.
func (p *Parser) Line(line []byte) []core.Event {
	e := core.Event{Kind: core.EventText, Seq: p.seq, Text: string(line)}
	p.seq++
	return []core.Event{e}
}

// ParseStream parses a whole transcript.
func ParseStream(f Format, r io.Reader) ([]core.Event, error) {
	p := NewParser(f)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []core.Event
	for sc.Scan() {
		out = append(out, p.Line(sc.Bytes())...)
	}
	return out, sc.Err()
}

// Backend is a resolved agent command.
type Backend struct {
	Name   string   // claude, codex, gemini or the command's name
	Argv   []string // full command line (argv[0] resolved)
	Format Format
}

// RunOptions configure one run.
type RunOptions struct {
	Prompt  string
	Model   string
	Dir     string
	Env     []string
	Stdout  io.Writer // rendered live
	Stderr  io.Writer
	Timeout time.Duration
	// OnEvent, when set, sees every event as it is parsed.
	OnEvent func(core.Event)
}

// RunResult is what a run produced.
type RunResult struct {
	ExitCode  int
	Duration  time.Duration
	Events    []core.Event
	FinalText string
}

// Run runs b. PLACEHOLDER.
func Run(ctx context.Context, b Backend, opts RunOptions) (RunResult, error) {
	return RunResult{}, nil
}
