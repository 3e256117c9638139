package retrieval

import "slices"

// This file implements the Snowball English ("Porter2") stemmer as published
// at snowballstem.org/algorithms/english/stemmer.html, written from the
// algorithm's description. It works on lower-case ASCII letters and the
// apostrophe; the analyzer never passes it anything else.

// maxStemLen bounds the words the stemmer works on; longer ones are returned
// unchanged (they are identifiers or junk, not English words).
const maxStemLen = 48

func isVowel(c byte) bool {
	const vowels = 1 | 1<<('e'-'a') | 1<<('i'-'a') | 1<<('o'-'a') | 1<<('u'-'a') | 1<<('y'-'a')
	c -= 'a'
	return c < 26 && vowels>>c&1 != 0
}

// stemmer holds the working state of one stem call; it lives on the caller's
// stack.
type stemmer struct {
	b      []byte
	p1, p2 int
}

// stem appends the Porter2 stem of word to dst and returns it. word must be
// lower-case ASCII letters and apostrophes.
func stem(dst []byte, word []byte) []byte {
	if len(word) <= 2 || len(word) > maxStemLen {
		return append(dst, word...)
	}
	if ex, ok := exception1(word); ok {
		return append(dst, ex...)
	}
	// Work in dst's spare capacity: the stem grows by at most one byte.
	mark := len(dst)
	dst = slices.Grow(dst, len(word)+2)
	dst = append(dst, word...)
	s := stemmer{b: dst[mark:len(dst):cap(dst)]}
	// Prelude: drop an initial apostrophe, mark consonant y as Y.
	if s.b[0] == '\'' {
		copy(s.b, s.b[1:])
		s.b = s.b[:len(s.b)-1]
	}
	yFound := false
	for i := range s.b {
		if s.b[i] == 'y' && (i == 0 || isVowel(s.b[i-1])) {
			s.b[i] = 'Y'
			yFound = true
		}
	}
	s.markRegions()
	s.step1a()
	if !exception2(s.b) {
		s.step1b()
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	if yFound {
		for i := range s.b {
			if s.b[i] == 'Y' {
				s.b[i] = 'y'
			}
		}
	}
	if len(s.b) > 0 && &s.b[0] != &dst[mark] {
		// A step reallocated (cannot happen with the growth above).
		return append(dst[:mark], s.b...)
	}
	return dst[:mark+len(s.b)]
}

func (s *stemmer) markRegions() {
	b := s.b
	n := len(b)
	s.p1, s.p2 = n, n
	p1 := -1
	switch b[0] { // (stem's words are at least 3 bytes)
	case 'g':
		if hasPrefix(b, "gener") {
			p1 = len("gener")
		}
	case 'c':
		if hasPrefix(b, "commun") {
			p1 = len("commun")
		}
	case 'a':
		if hasPrefix(b, "arsen") {
			p1 = len("arsen")
		}
	}
	if p1 < 0 {
		p1 = regionAfter(b, 0)
	}
	s.p1 = p1
	s.p2 = regionAfter(b, p1)
}

// regionAfter returns the index after the first non-vowel that follows a
// vowel at or after from, or len(b).
func regionAfter(b []byte, from int) int {
	for i := from + 1; i < len(b); i++ {
		if !isVowel(b[i]) && isVowel(b[i-1]) {
			return i + 1
		}
	}
	return len(b)
}

func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

func hasSuffix(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	b = b[len(b)-len(s):]
	for i := len(s) - 1; i >= 0; i-- {
		if b[i] != s[i] {
			return false
		}
	}
	return true
}

// shortSyllableAt reports whether b[:end] ends in a short syllable: a
// non-vowel, a vowel, a non-vowel other than w, x or Y; or, at the start of
// the word, a vowel followed by a non-vowel.
func shortSyllableAt(b []byte, end int) bool {
	if end >= 3 {
		c := b[end-1]
		return !isVowel(c) && c != 'w' && c != 'x' && c != 'Y' && isVowel(b[end-2]) && !isVowel(b[end-3])
	}
	return end == 2 && isVowel(b[0]) && !isVowel(b[1])
}

func (s *stemmer) replace(suffixLen int, with string) {
	s.b = append(s.b[:len(s.b)-suffixLen], with...)
}

func containsVowel(b []byte) bool {
	for _, c := range b {
		if isVowel(c) {
			return true
		}
	}
	return false
}

func (s *stemmer) step1a() {
	// The suffixes tried by the last letter they end in.
	switch s.b[len(s.b)-1] {
	case '\'':
		if hasSuffix(s.b, "'s'") {
			s.b = s.b[:len(s.b)-3]
		} else {
			s.b = s.b[:len(s.b)-1]
		}
	case 's':
		if hasSuffix(s.b, "'s") {
			s.b = s.b[:len(s.b)-2]
		}
	}
	b := s.b
	if len(b) == 0 {
		return
	}
	switch b[len(b)-1] {
	case 'd':
		if hasSuffix(b, "ied") {
			s.ie()
		}
	case 's':
		switch {
		case hasSuffix(b, "sses"):
			s.replace(4, "ss")
		case hasSuffix(b, "ies"):
			s.ie()
		case hasSuffix(b, "us"), hasSuffix(b, "ss"):
		default:
			// Delete if the part before the letter preceding the s has a vowel.
			if len(b) >= 3 && containsVowel(b[:len(b)-2]) {
				s.b = b[:len(b)-1]
			}
		}
	}
}

// ie replaces a final "ied" or "ies" by "i" after more than one letter,
// by "ie" after one.
func (s *stemmer) ie() {
	if len(s.b) > 4 {
		s.replace(3, "i")
	} else {
		s.replace(3, "ie")
	}
}

func (s *stemmer) step1b() {
	b := s.b
	n := len(b)
	if n == 0 {
		return
	}
	// The suffixes tried by the last letter they end in.
	var sl int
	switch b[n-1] {
	case 'y':
		if hasSuffix(b, "eedly") {
			s.eed(5)
			return
		}
		switch {
		case hasSuffix(b, "ingly"):
			sl = 5
		case hasSuffix(b, "edly"):
			sl = 4
		default:
			return
		}
	case 'd':
		if hasSuffix(b, "eed") {
			s.eed(3)
			return
		}
		if !hasSuffix(b, "ed") {
			return
		}
		sl = 2
	case 'g':
		if !hasSuffix(b, "ing") {
			return
		}
		sl = 3
	default:
		return
	}
	if !containsVowel(b[:n-sl]) {
		return
	}
	s.b = b[:n-sl]
	b = s.b
	n = len(b)
	switch {
	case hasSuffix(b, "at"), hasSuffix(b, "bl"), hasSuffix(b, "iz"):
		s.b = append(b, 'e')
	case n >= 2 && b[n-1] == b[n-2] && isDouble(b[n-1]):
		s.b = b[:n-1]
	case n <= s.p1 && shortSyllableAt(b, n):
		s.b = append(b, 'e')
	}
}

// eed replaces a final "eed" or "eedly", sl bytes, by "ee" in R1.
func (s *stemmer) eed(sl int) {
	if len(s.b)-sl >= s.p1 {
		s.replace(sl, "ee")
	}
}

func isDouble(c byte) bool {
	switch c {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

func (s *stemmer) step1c() {
	b := s.b
	n := len(b)
	if n > 2 && (b[n-1] == 'y' || b[n-1] == 'Y') && !isVowel(b[n-2]) {
		b[n-1] = 'i'
	}
}

type rule struct {
	suffix, with string
}

// suffixRules holds a step's rules by the last letter of their suffix, in
// the step's order: a word is tried only against those its last letter
// allows, the first match being the same.
type suffixRules [26][]rule

func byLastLetter(rules []rule) (t suffixRules) {
	for _, r := range rules {
		c := r.suffix[len(r.suffix)-1] - 'a'
		t[c] = append(t[c], r)
	}
	return t
}

// ending returns the rules whose suffix ends in c.
func (t *suffixRules) ending(c byte) []rule {
	if c -= 'a'; c < 26 {
		return t[c]
	}
	return nil
}

// step2Rules are ordered so that a longer suffix precedes every shorter one
// it ends with; the first match is the longest.
var step2Rules = byLastLetter([]rule{
	{"ization", "ize"}, {"ational", "ate"}, {"fulness", "ful"}, {"ousness", "ous"}, {"iveness", "ive"},
	{"tional", "tion"}, {"biliti", "ble"}, {"lessli", "less"},
	{"entli", "ent"}, {"ation", "ate"}, {"alism", "al"}, {"aliti", "al"}, {"ousli", "ous"}, {"iviti", "ive"}, {"fulli", "ful"},
	{"enci", "ence"}, {"anci", "ance"}, {"abli", "able"}, {"izer", "ize"}, {"ator", "ate"}, {"alli", "al"},
	{"bli", "ble"}, {"ogi", "og"},
	{"li", ""},
})

func (s *stemmer) step2() {
	b := s.b
	if len(b) < 2 {
		return
	}
	for _, r := range step2Rules.ending(b[len(b)-1]) {
		if !hasSuffix(b, r.suffix) {
			continue
		}
		start := len(b) - len(r.suffix)
		if start < s.p1 {
			return
		}
		switch r.suffix {
		case "ogi":
			if start == 0 || b[start-1] != 'l' {
				return
			}
		case "li":
			if start == 0 || !validLi(b[start-1]) {
				return
			}
		}
		s.replace(len(r.suffix), r.with)
		return
	}
}

func validLi(c byte) bool {
	switch c {
	case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		return true
	}
	return false
}

var step3Rules = byLastLetter([]rule{
	{"ational", "ate"}, {"tional", "tion"}, {"alize", "al"}, {"icate", "ic"}, {"iciti", "ic"},
	{"ative", ""}, {"ical", "ic"}, {"ness", ""}, {"ful", ""},
})

func (s *stemmer) step3() {
	b := s.b
	if len(b) < 3 {
		return
	}
	for _, r := range step3Rules.ending(b[len(b)-1]) {
		if !hasSuffix(b, r.suffix) {
			continue
		}
		start := len(b) - len(r.suffix)
		if start < s.p1 || (r.suffix == "ative" && start < s.p2) {
			return
		}
		s.replace(len(r.suffix), r.with)
		return
	}
}

// step4Rules delete their suffix (with is empty).
var step4Rules = byLastLetter([]rule{
	{"ement", ""}, {"ance", ""}, {"ence", ""}, {"able", ""}, {"ible", ""}, {"ment", ""},
	{"ant", ""}, {"ent", ""}, {"ism", ""}, {"ate", ""}, {"iti", ""}, {"ous", ""}, {"ive", ""}, {"ize", ""}, {"ion", ""},
	{"al", ""}, {"er", ""}, {"ic", ""},
})

func (s *stemmer) step4() {
	b := s.b
	if len(b) < 2 {
		return
	}
	for _, r := range step4Rules.ending(b[len(b)-1]) {
		suf := r.suffix
		if !hasSuffix(b, suf) {
			continue
		}
		start := len(b) - len(suf)
		if start < s.p2 {
			return
		}
		if suf == "ion" && (start == 0 || (b[start-1] != 's' && b[start-1] != 't')) {
			return
		}
		s.b = b[:start]
		return
	}
}

func (s *stemmer) step5() {
	b := s.b
	n := len(b)
	if n == 0 {
		return
	}
	switch b[n-1] {
	case 'e':
		if n-1 >= s.p2 || (n-1 >= s.p1 && !shortSyllableAt(b, n-1)) {
			s.b = b[:n-1]
		}
	case 'l':
		if n-1 >= s.p2 && n >= 2 && b[n-2] == 'l' {
			s.b = b[:n-1]
		}
	}
}

func exception1(w []byte) (string, bool) {
	switch string(w) {
	case "skis":
		return "ski", true
	case "skies":
		return "sky", true
	case "dying":
		return "die", true
	case "lying":
		return "lie", true
	case "tying":
		return "tie", true
	case "idly":
		return "idl", true
	case "gently":
		return "gentl", true
	case "ugly":
		return "ugli", true
	case "early":
		return "earli", true
	case "only":
		return "onli", true
	case "singly":
		return "singl", true
	case "sky", "news", "howe", "atlas", "cosmos", "bias", "andes":
		return string(w), true
	}
	return "", false
}

func exception2(w []byte) bool {
	switch string(w) {
	case "inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed":
		return true
	}
	return false
}
