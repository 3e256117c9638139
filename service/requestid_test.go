package service

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestSaneRequestIDMatchesRegexp checks the hand-written check against the
// regexp it replaces (compiled here, in the test only).
func TestSaneRequestIDMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)
	inputs := []string{"", "a", "req-1", "a b", "a\n", strings.Repeat("x", 128), strings.Repeat("x", 129), "ü", "a/b+c=d:e.f_g-h", "<script>"}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "Z", "9", ".", "_", ":", "/", "+", "=", "-", " ", "\n", "é", "\x00", "*"}
	for range 20000 {
		var b strings.Builder
		n := rng.IntN(8)
		if rng.IntN(50) == 0 {
			n = 120 + rng.IntN(16)
		}
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		if got, want := saneRequestID(in), re.MatchString(in); got != want {
			t.Fatalf("saneRequestID(%q) = %v, regexp %v", in, got, want)
		}
	}
}
