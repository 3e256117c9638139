package core

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeText folds case, collapses whitespace and drops punctuation at
// word edges: the form content hashes and similarity are computed on.
func NormalizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r > utf8.RuneSelf:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ContentHash is the hex SHA-256 of the normalised question and answer: two
// QAs with the same hash are the same knowledge.
func ContentHash(question, answer string) string {
	h := sha256.New()
	h.Write([]byte(NormalizeText(question)))
	h.Write([]byte{0})
	h.Write([]byte(NormalizeText(answer)))
	return hex.EncodeToString(h.Sum(nil))
}

// Similarity is the Jaccard similarity of the character 3-gram sets of the
// normalised texts, in [0,1]. Near-duplicate detection compares it with a
// threshold (DuplicateThreshold).
func Similarity(a, b string) float64 {
	sa, sb := shingles(NormalizeText(a)), shingles(NormalizeText(b))
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	inter := 0
	for g := range sa {
		if _, ok := sb[g]; ok {
			inter++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// DuplicateThreshold is the similarity above which a candidate's question
// and answer are both considered a near duplicate of an existing QA.
const DuplicateThreshold = 0.85

func shingles(s string) map[string]struct{} {
	rs := []rune(s)
	out := make(map[string]struct{}, len(rs))
	if len(rs) < 3 {
		if len(rs) > 0 {
			out[s] = struct{}{}
		}
		return out
	}
	for i := 0; i+3 <= len(rs); i++ {
		out[string(rs[i:i+3])] = struct{}{}
	}
	return out
}

// Specifics returns the tokens of s that name one thing exactly — numbers
// and versions ("1.21", "5"), paths and URLs, identifiers (snake_case,
// camelCase, dotted names, --flags, anything containing a digit) and words
// in backquotes — each once, sorted. Two texts that differ in one of them
// state different facts however similar the rest reads ("Go 1.21" and
// "Go 1.22", "timeout 5" and "timeout 50"), so a near duplicate needs
// them to match exactly (SameSpecifics).
func Specifics(s string) []string {
	seen := map[string]struct{}{}
	var tok strings.Builder
	quoted, tokQuoted := false, false
	end := func() {
		t := strings.TrimRight(tok.String(), ".:,;?!-=")
		tok.Reset()
		if t != "" && (tokQuoted || specific(t)) {
			seen[t] = struct{}{}
		}
		tokQuoted = false
	}
	for _, r := range s {
		switch {
		case r == '`':
			end()
			quoted = !quoted
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-/\\:@$=~+#%", r)):
			tok.WriteRune(r)
			tokQuoted = tokQuoted || quoted
		default:
			end()
		}
	}
	end()
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// specific reports whether token t (ASCII, trailing punctuation trimmed)
// names one thing exactly.
func specific(t string) bool {
	if strings.ContainsAny(t, "0123456789/\\_@$=~#%") || strings.HasPrefix(t, "-") || strings.Contains(t, "::") {
		return true
	}
	if i := strings.IndexByte(t, '.'); i > 0 && i < len(t)-1 {
		return true // a dotted name: config.toml, os.Exit
	}
	for i := 1; i < len(t); i++ {
		if unicode.IsLower(rune(t[i-1])) && unicode.IsUpper(rune(t[i])) {
			return true // camelCase
		}
	}
	return false
}

// SameSpecifics reports whether a and b name exactly the same specifics
// (Specifics): the condition, besides similar wording, for one to be a
// near duplicate of the other.
func SameSpecifics(a, b string) bool {
	return slices.Equal(Specifics(a), Specifics(b))
}
