package retrieval

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"How do I fix ENOENT in parseHTTPHeader at /usr/lib/x.so?",
		"内存泄漏怎么办 日本語 한국어",
		"std::io::Error e.g. --force v1.2.3 0x1f",
		"don't it’s user's ''' -- // \\ ::",
		"ＡＢＣ　１２３ café",
	} {
		f.Add(s, "answer text")
	}
	a := NewAnalyzer()
	f.Fuzz(func(t *testing.T, q, ans string) {
		terms := a.Terms(q)
		for _, term := range terms {
			if term == "" || len(term) > MaxTermLen {
				t.Fatalf("Terms(%q) has term %q (len %d)", q, term, len(term))
			}
			if utf8.ValidString(q) && !utf8.ValidString(term) {
				t.Fatalf("Terms(%q) has invalid UTF-8 term %q", q, term)
			}
		}
		if again := a.Terms(q); !slices.Equal(terms, again) {
			t.Fatalf("Terms(%q) not deterministic: %q vs %q", q, terms, again)
		}
		checkFunctionWords(t, q)
		d := a.Analyze(q, ans)
		var n [NumFields]uint32
		for term, tf := range d.Terms {
			if term == "" || tf == (TF{}) {
				t.Fatalf("Analyze: term %q tf %v", term, tf)
			}
			for f := range NumFields {
				n[f] += tf[f]
			}
		}
		if n != d.Len || int(d.Len[FieldQuestion]) != len(terms) {
			t.Fatalf("Analyze lengths %v, term sums %v, question terms %d", d.Len, n, len(terms))
		}
	})
}
