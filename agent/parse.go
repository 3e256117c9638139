package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
)

// Format is a backend's output format.
type Format string

const (
	FormatClaude Format = "claude" // claude -p --output-format stream-json --verbose
	FormatCodex  Format = "codex"  // codex exec --json
	FormatGemini Format = "gemini" // gemini -o stream-json
	FormatText   Format = "text"   // any other command: plain text
)

const (
	// MaxLineBytes is the longest stdout line parsed whole; the rest of a
	// longer line is dropped.
	MaxLineBytes = 16 << 20
	// MaxFinalTextBytes bounds the result text of a FormatText run (the tail
	// is kept).
	MaxFinalTextBytes = 64 << 10
)

// Parser turns output lines of one format into events. Not safe for
// concurrent use; one per run.
type Parser struct {
	f       Format
	seq     int
	session string

	// claude and gemini: tool calls by id, to label their results.
	calls map[string]call

	// codex: the last agent message of the current turn; the command
	// executions already announced by item.started.
	lastMessage string
	started     map[string]bool

	// gemini: assistant text not yet flushed, and the assistant text of the
	// current turn (reset by a tool call).
	pending  strings.Builder
	inText   bool
	turnText []string
	// delta, when set, sees assistant text deltas as they arrive (before
	// they are flushed as one event); Run uses it to render gemini live.
	delta func(string)

	// text: the tail of the whole stdout.
	all []byte

	out []core.Event
}

type call struct {
	tool    string
	command string
	paths   []string
}

// NewParser returns a parser for f. An unknown format parses as FormatText.
func NewParser(f Format) *Parser {
	switch f {
	case FormatClaude, FormatCodex, FormatGemini, FormatText:
	default:
		f = FormatText
	}
	return &Parser{f: f, calls: map[string]call{}, started: map[string]bool{}}
}

// Format reports the parser's format.
func (p *Parser) Format() Format { return p.f }

// Line parses one output line (without its newline) and returns the events
// it completes. The slice is the caller's.
func (p *Parser) Line(line []byte) []core.Event {
	p.out = nil
	line = bytes.TrimSuffix(line, []byte("\r"))
	switch p.f {
	case FormatClaude:
		p.claude(line)
	case FormatCodex:
		p.codex(line)
	case FormatGemini:
		p.gemini(line)
	default:
		p.text(line)
	}
	return p.out
}

// Finish returns the events a stream leaves pending at its end: gemini's
// unflushed assistant text, and FormatText's result. Call it once, after the
// last line.
func (p *Parser) Finish() []core.Event {
	p.out = nil
	switch p.f {
	case FormatGemini:
		p.flushGemini()
	case FormatText:
		p.emit(core.Event{Kind: core.EventResult, Text: tailText(p.all, MaxFinalTextBytes)})
	}
	return p.out
}

// ParseStream parses a whole transcript, Finish included.
func ParseStream(f Format, r io.Reader) ([]core.Event, error) {
	p := NewParser(f)
	lr := newLineReader(r, MaxLineBytes)
	var out []core.Event
	for {
		line, err := lr.next()
		if line != nil {
			out = append(out, p.Line(line)...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return append(out, p.Finish()...), err
		}
	}
	return append(out, p.Finish()...), nil
}

func (p *Parser) emit(e core.Event) {
	if e.SessionID == "" {
		e.SessionID = p.session
	}
	e.Seq = p.seq
	p.seq++
	p.out = append(p.out, e)
}

// plain keeps a non-JSON line of a JSON backend as text (Raw "line").
func (p *Parser) plain(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	p.emit(core.Event{Kind: core.EventText, Text: string(line), Raw: "line"})
}

// decode unmarshals a JSON object line into v. It reports false when the
// line is not a JSON object; a field of an unexpected type is left zero and
// the others are kept.
func decode(line []byte, v any) bool {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	err := json.Unmarshal(t, v)
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}

func (p *Parser) text(line []byte) {
	p.all = append(p.all, line...)
	p.all = append(p.all, '\n')
	if len(p.all) > 2*MaxFinalTextBytes+1024 {
		p.all = append(p.all[:0], p.all[len(p.all)-MaxFinalTextBytes-1024:]...)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	p.emit(core.Event{Kind: core.EventText, Text: string(line)})
}

// tailText trims b and keeps at most max bytes of its end, starting on a
// UTF-8 character boundary.
func tailText(b []byte, max int) string {
	b = bytes.TrimSpace(b)
	if len(b) > max {
		b = b[len(b)-max:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// compact returns raw JSON compacted, or "" when it is empty or null.
func compact(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return string(t)
	}
	return b.String()
}

// field returns the string value of the first of keys present in the JSON
// object raw.
func field(raw json.RawMessage, keys ...string) string {
	if len(raw) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range keys {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// contentText returns a tool result's content: a JSON string, or the text
// parts of an array of content blocks joined by newlines.
func contentText(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(t, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(t, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, part := range parts {
			if part.Text != "" {
				texts = append(texts, part.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	if string(t) == "null" {
		return ""
	}
	return compact(t)
}

// lineReader reads lines of any length, keeping at most max bytes of each.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline. At the end it returns the
// last unterminated line (if any) with io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if room := lr.max - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(lr.buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			if len(lr.buf) == 0 {
				return nil, err
			}
			return bytes.TrimSuffix(lr.buf, []byte("\n")), err
		}
	}
}
