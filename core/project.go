package core

import (
	"strings"
	"unicode/utf8"
)

// SanitizeProjectID turns any string (a git remote "github.com/acme/app", a
// path) into a valid project_id: lower case, every run of characters outside
// [a-z0-9_-] becomes one '-', leading and trailing '-'/'_' trimmed, at most
// 64 bytes (never split inside a UTF-8 character: the output is ASCII), and
// "default" when nothing is left.
func SanitizeProjectID(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		case r == utf8.RuneError:
			dash = true
		default:
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-_")
	if len(out) > MaxProjectIDLen {
		out = strings.Trim(out[:MaxProjectIDLen], "-_")
	}
	if out == "" {
		return "default"
	}
	return out
}
