package mdmemory

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Category is an entry's kind, as in the ExcelManus design.
type Category string

const (
	FilePattern   Category = "file_pattern"
	UserPref      Category = "user_pref"
	ErrorSolution Category = "error_solution"
	General       Category = "general"
)

// Categories are every category, in the order of the block's sections.
var Categories = []Category{ErrorSolution, FilePattern, UserPref, General}

// ParseCategory accepts a category name.
func ParseCategory(s string) (Category, bool) {
	c := Category(strings.TrimSpace(s))
	return c, slices.Contains(Categories, c)
}

// Title is the heading of the category's section.
func (c Category) Title() string {
	switch c {
	case ErrorSolution:
		return "Errors and their solutions"
	case FilePattern:
		return "File patterns"
	case UserPref:
		return "User preferences"
	}
	return "General"
}

// Topic is the topic file of the category (the ExcelManus mapping):
// file_patterns.md and user_prefs.md; "" for the main file.
func (c Category) Topic() string {
	switch c {
	case FilePattern:
		return "file_patterns.md"
	case UserPref:
		return "user_prefs.md"
	}
	return ""
}

// TimeLayout is an entry's timestamp (UTC, minute precision).
const TimeLayout = "2006-01-02 15:04"

// Entry is one memory entry.
type Entry struct {
	// Time is when the knowledge was recorded, UTC, to the minute.
	Time     time.Time
	Category Category
	// ID is the QA's id, when the entry comes from memex.
	ID string
	// Level is the QA's validation level (1–3); 0 when not known.
	Level int
	// Question is one line; empty for a free-form entry.
	Question string
	// Content is the entry's body (the QA's answer).
	Content string
	// Line is the heading's 1-based line, set by ParseEntries; Format
	// ignores it.
	Line int
}

// Warning is a malformed part of a document that was skipped.
type Warning struct {
	Line int // 1-based
	Msg  string
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Msg) }

// Normalize returns e as Format writes it and Parse reads it back: time
// truncated to the minute in UTC, the question on one line, the content
// with \r\n turned into \n and without leading or trailing blank lines.
func Normalize(e Entry) Entry {
	e.Line = 0
	e.Time = e.Time.UTC().Truncate(time.Minute)
	e.Question = strings.Join(strings.Fields(e.Question), " ")
	e.Content = normContent(e.Content)
	return e
}

func normContent(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// Valid reports why e cannot be written, or "" when it can.
func (e Entry) Valid() string {
	switch {
	case !slices.Contains(Categories, e.Category):
		return fmt.Sprintf("unknown category %q", e.Category)
	case normContent(e.Content) == "":
		return "empty content"
	case e.Level < 0 || e.Level > 9:
		return "level out of range"
	case e.ID != "" && (!idRE().MatchString(e.ID) || levelRE().MatchString(e.ID)):
		return "malformed id"
	}
	return ""
}

var (
	idRE     = lazyRE(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	levelRE  = lazyRE(`^L[0-9]$`)
	headRE   = lazyRE(`^### \[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\] ([a-z_]+)(?: \(([^()]*)\))?\s*$`)
	qPrefix  = "**Q:** "
	sepLine  = "---"
	headPref = "### ["
)

// special reports whether a content line, stripped of leading
// backslashes, would read as structure.
func special(line string) bool {
	core := strings.TrimLeft(line, `\`)
	t := strings.TrimSpace(core)
	return t == sepLine || strings.HasPrefix(t, headPref) || strings.HasPrefix(t, "<!-- memex:") ||
		strings.HasPrefix(core, qPrefix)
}

func escapeLine(line string) string {
	if special(line) {
		return `\` + line
	}
	return line
}

func unescapeLine(line string) string {
	if strings.HasPrefix(line, `\`) && special(line) {
		return line[1:]
	}
	return line
}

// heading is an entry's heading line.
func heading(e Entry) string {
	h := "### [" + e.Time.UTC().Format(TimeLayout) + "] " + string(e.Category)
	var meta []string
	if e.ID != "" {
		meta = append(meta, e.ID)
	}
	if e.Level > 0 {
		meta = append(meta, "L"+strconv.Itoa(e.Level))
	}
	if len(meta) > 0 {
		h += " (" + strings.Join(meta, ", ") + ")"
	}
	return h
}

// formatEntry writes one entry, ending with its "---" line and a blank
// line.
func formatEntry(b *strings.Builder, e Entry) {
	e = Normalize(e)
	b.WriteString(heading(e))
	b.WriteString("\n\n")
	if e.Question != "" {
		b.WriteString(qPrefix + e.Question + "\n\n")
	}
	for _, l := range strings.Split(e.Content, "\n") {
		b.WriteString(escapeLine(l))
		b.WriteByte('\n')
	}
	b.WriteString("\n" + sepLine + "\n\n")
}

// FormatEntries writes entries in the given order (the seed's format).
func FormatEntries(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		formatEntry(&b, e)
	}
	return b.String()
}

// ParseEntries reads every entry of text; lines outside entries are
// ignored. A malformed entry (a heading with a bad timestamp or category,
// an empty body, a heading that is never closed by "---") is skipped with a
// warning naming its line. first is the line number of text's first line.
func ParseEntries(text string, first int) ([]Entry, []Warning) {
	var (
		out   []Entry
		warns []Warning
	)
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, headPref) {
			continue
		}
		ln := first + i
		m := headRE().FindStringSubmatch(l)
		end := closing(lines, i+1)
		skip := func(msg string) {
			warns = append(warns, Warning{Line: ln, Msg: msg})
			if end > i {
				i = end
			}
		}
		if end < 0 {
			warns = append(warns, Warning{Line: ln, Msg: `entry is not closed by a "---" line before the next entry or the end; skipped`})
			continue
		}
		if m == nil {
			skip(`malformed entry heading (want "### [YYYY-MM-DD HH:MM] category"); skipped`)
			continue
		}
		ts, err := time.ParseInLocation(TimeLayout, m[1], time.UTC)
		if err != nil {
			skip(fmt.Sprintf("malformed timestamp %q; skipped", m[1]))
			continue
		}
		cat, ok := ParseCategory(m[2])
		if !ok {
			skip(fmt.Sprintf("unknown category %q (file_pattern, user_pref, error_solution, general); skipped", m[2]))
			continue
		}
		e := Entry{Time: ts, Category: cat, Line: ln}
		if m[3] != "" {
			if msg := parseMeta(&e, m[3]); msg != "" {
				skip(msg + "; skipped")
				continue
			}
		}
		body := lines[i+1 : end]
		j := 0
		for j < len(body) && strings.TrimSpace(body[j]) == "" {
			j++
		}
		if j < len(body) && strings.HasPrefix(body[j], qPrefix) {
			e.Question = strings.TrimSpace(strings.TrimPrefix(body[j], qPrefix))
			j++
		}
		content := make([]string, 0, len(body)-j)
		for _, b := range body[j:] {
			content = append(content, unescapeLine(b))
		}
		e.Content = normContent(strings.Join(content, "\n"))
		if e.Content == "" {
			skip("entry has no content; skipped")
			continue
		}
		out = append(out, e)
		i = end
	}
	return out, warns
}

// closing returns the index of the "---" line that closes the entry whose
// body starts at from, or -1 when another entry heading or the end comes
// first.
func closing(lines []string, from int) int {
	for k := from; k < len(lines); k++ {
		switch {
		case strings.TrimSpace(lines[k]) == sepLine:
			return k
		case strings.HasPrefix(lines[k], headPref):
			return -1
		}
	}
	return -1
}

func parseMeta(e *Entry, meta string) string {
	for _, f := range strings.Split(meta, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case levelRE().MatchString(f):
			e.Level = int(f[1] - '0')
		case idRE().MatchString(f) && e.ID == "":
			e.ID = f
		default:
			return fmt.Sprintf("malformed entry details %q", meta)
		}
	}
	return ""
}

// splitLines splits text into lines without their "\n" (and "\r").
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	ls := strings.Split(text, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}

// SortNewest orders entries newest first; ties are broken by id, category,
// question and content so the order is total.
func SortNewest(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int {
		return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Category, b.Category),
			cmp.Compare(a.Question, b.Question), cmp.Compare(a.Content, b.Content), cmp.Compare(a.Level, b.Level))
	})
}
