package redact

import (
	"regexp"
	"strings"
	"sync"
)

var (
	pemBegin = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	})
	pemEnd = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	})
)

// privateKeyMarker replaces the body lines of a private key block.
var privateKeyMarker = Marker("private-key")

// Lines redacts a stream of text one piece at a time (a line, or an event's
// text) and remembers an open private-key block across pieces: when an agent
// prints a PEM key line by line, every line arrives as its own event, and a
// body line alone looks like any base64. Between a BEGIN … PRIVATE KEY line
// and its END line everything is replaced by one marker per line. Not safe
// for concurrent use; one per stream.
type Lines struct {
	r     *Redactor
	inKey bool
}

// NewLines returns a stateful line redactor.
func (r *Redactor) NewLines() *Lines { return &Lines{r: r} }

// Redact redacts text (which may hold several lines), carrying the
// private-key state from earlier calls, and returns the findings of the
// stateless rules plus one private-key finding per key block started.
func (l *Lines) Redact(text string) (string, []Finding) {
	if !l.inKey && !strings.Contains(text, "PRIVATE KEY") {
		return l.r.Redact(text)
	}
	var b strings.Builder
	var all []Finding
	lines := strings.SplitAfter(text, "\n")
	for _, line := range lines {
		body, nl := strings.CutSuffix(line, "\n")
		out, fs := l.line(body)
		all = append(all, fs...)
		b.WriteString(out)
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String(), all
}

func (l *Lines) line(s string) (string, []Finding) {
	if l.inKey {
		if loc := pemEnd().FindStringIndex(s); loc != nil {
			l.inKey = false
			rest, fs := l.r.Redact(s[loc[1]:])
			return privateKeyMarker + rest, fs
		}
		return privateKeyMarker, nil
	}
	out, fs := l.r.Redact(s)
	if loc := pemBegin().FindStringIndex(out); loc != nil && pemEnd().FindStringIndex(out[loc[1]:]) == nil {
		// A key block opens on this line and does not close on it.
		l.inKey = true
		fs = append(fs, Finding{Rule: "private-key", Start: loc[0], End: len(s)})
		return out[:loc[0]] + privateKeyMarker, fs
	}
	return out, fs
}
