package evidence

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/memex-dev/memex/core"
)

// AnchorPattern returns the expression of a citation anchor `[QA_REF <qa_id>]`
// (compiled on first use). Only anchors in the agent's own text count
// (Anchors).
var AnchorPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[QA_REF\s+([A-Za-z0-9_.:\-]+)\]`) })

// looseAnchor matches anything that looks like an anchor, well formed or
// not, for StripAnchors.
var looseAnchor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)[ \t]*\[\s*QA_REF[^\]\n]{0,200}\]?`) })

// ValidID reports whether id can be cited as an anchor (1–256 of
// AnchorPattern's id characters [A-Za-z0-9_.:-]); other ids are neither
// selected nor rendered.
func ValidID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// Anchors returns the distinct qa_ids cited in the agent's own text
// (EventText and EventResult), in order of first citation.
func Anchors(events []core.Event) []string {
	var out []string
	for _, e := range events {
		if !e.Own() {
			continue
		}
		for _, m := range AnchorPattern().FindAllStringSubmatch(e.Text, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// StripAnchors removes every anchor-like span ("[QA_REF …]", any case,
// malformed ones too), repeatedly, since removing one can join the halves of
// another. Text learned from a run never carries an anchor.
func StripAnchors(s string) string {
	for strings.Contains(strings.ToUpper(s), "QA_REF") {
		t := looseAnchor().ReplaceAllString(s, "")
		if t == s {
			break
		}
		s = t
	}
	return s
}
