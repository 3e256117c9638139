package httpstore

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestFieldPrefixMatchesRegexp checks the hand-written splitter against
// the regexp it replaces (compiled here, in the test only).
func TestFieldPrefixMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.\[\]]*): (.+)$`)
	inputs := []string{"", "limit: must be 1-50", "references[0].qa_id: is required", "_x: y", "9x: y", "x:y", "x: ", "x: a\nb",
		"a b: c", "body: malformed JSON at byte 3", "x:: y", "x: : y", "Ünïcode: x", "x: ü", "x: \xff", "[x]: y", "x.y[]: z"}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", "_", "0", ".", "[", "]", ":", " ", "\n", "-", "é", "x"}
	for range 20000 {
		b := make([]byte, 0, 12)
		for range rng.IntN(12) {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		f, r, ok := fieldPrefix(in)
		m := re.FindStringSubmatch(in)
		if ok != (m != nil) || ok && (f != m[1] || r != m[2]) {
			t.Fatalf("fieldPrefix(%q) = %q, %q, %v; regexp %q", in, f, r, ok, m)
		}
	}
}
