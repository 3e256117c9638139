package retrieval

import (
	"strings"
	"unicode"
)

// Analyzer turns text into index terms. It is safe for concurrent use.
// PLACEHOLDER implementation: lower-cased letter/digit runs. Replaced by the
// real tokeniser (stemming, CJK, identifiers, paths).
type Analyzer struct{}

// NewAnalyzer returns the default analyzer.
func NewAnalyzer() *Analyzer { return &Analyzer{} }

// Terms returns the index terms of text, in order, with repeats.
func (a *Analyzer) Terms(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Analyze builds the document of a QA.
func (a *Analyzer) Analyze(question, answer string) Doc {
	d := Doc{Terms: map[string]TF{}}
	for f, text := range [NumFields]string{question, answer} {
		for _, t := range a.Terms(text) {
			tf := d.Terms[t]
			tf[f]++
			d.Terms[t] = tf
			d.Len[f]++
		}
	}
	return d
}
