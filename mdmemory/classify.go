package mdmemory

import (
	"strings"
)

var errorWords = lazyRE(`(?i)\b(?:error|errors|fail(?:s|ed|ing|ure)?|panic(?:s|ked)?|exception|traceback|crash(?:es|ed)?|segfault|undefined|cannot|can't|couldn't|not found|denied|timeout|timed out|race|deadlock|flaky|broken|fix(?:es|ed)?)\b`)

// Classify chooses a QA's category: an explicit category (a metadata
// value, or a tag named like a category) wins; otherwise a question about
// an error, a failure or a fix is error_solution, and anything else is
// general. file_pattern and user_pref are never guessed: they come from
// imported or distilled entries that say so.
func Classify(question string, tags []string, explicit string) Category {
	if c, ok := ParseCategory(explicit); ok {
		return c
	}
	for _, t := range tags {
		if c, ok := ParseCategory(strings.ToLower(t)); ok {
			return c
		}
	}
	if errorWords().MatchString(question) {
		return ErrorSolution
	}
	return General
}

// Truncate cuts content to at most max characters at a line break when
// one is near, marking the cut with note on its own line. Content within
// max is returned unchanged.
func Truncate(content string, max int, note string) string {
	rs := []rune(content)
	if len(rs) <= max {
		return content
	}
	budget := max - len([]rune(note)) - 1
	if budget < 1 {
		budget = 1
	}
	cut := string(rs[:budget])
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " \t\n") + "\n" + note
}
