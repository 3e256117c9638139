package retrieval

// The re-rank of a search's final hits by the query's function words.

import (
	"context"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/memex-dev/memex/core"
)

// Rerank re-orders hits, a search's final hits for query (best first, as
// Search returns them), by the English function words ("how", "why",
// "can", "my", …: the stop words the analyzer drops) the query shares with
// each hit's question; words(i) is the set of function words of the
// question of hits[i] (FunctionWordsOf). It changes hits in place: the
// Score and Relevance of a hit sharing some rise, and the hits are sorted
// again (ties: lower Doc first).
//
// The content terms decide what a hit is about; the function words often
// decide what is asked about it. "How do I exchange currency?" and "What
// currencies can I exchange?" match the same terms, but only the first
// asks how; "Why did my top up not work?" is closer to "Why didn't my top
// up work?" than to "Is my top up not working?". Function words are not
// indexed (their posting lists would be the longest of all), so they
// cannot find a document, only re-order the few the content terms found,
// from the text of those few, which every caller holds anyway to answer
// with them: no posting list is read, and nothing is stored.
//
// Each of the query's distinct function words w weighs
//
//	v(w) = FunctionWordWeight · (ln 2)^p · (k3+1)·n(w)/(k3+n(w))
//
// (p = IDFExponent, n(w) the times the query has w): a function word is
// taken to be in half the documents (idf ln 2), its real document
// frequency being unknown, and weighs FunctionWordWeight of such a term.
// A hit whose question holds w gains v(w)·x/(x+k1), x the question's
// FieldWeight: the BM25F saturation of one occurrence in the question
// field (a function word counts once however often the question has it,
// and without length normalisation: the field's length, in indexed terms,
// is not at hand). With B the sum, and norm the weight of the query's
// indexed terms (Relevance = Score/norm), the hit's Relevance becomes
//
//	(Score + B) / (norm + B)
//
// the function words it shares counted both in what it covers and in the
// query, those it does not share not at all: a hit sharing none keeps its
// Relevance, one sharing some gains, and none reaches 1. So a min_score
// threshold is still passed by every hit that passed it. Score becomes
// Relevance·norm, so that Score and Relevance order the hits alike.
//
// With FunctionWordWeight 0, a query without function words, or a query
// with CJK text (whose Relevance is calibrated, see the package comment),
// hits are left as they are.
func (s *Scorer) Rerank(query string, hits []Hit, words func(i int) FunctionWords) {
	if s.p.FunctionWordWeight <= 0 || len(hits) == 0 || hasCJK(query) {
		return
	}
	var buf [16]functionWord
	s.rerank(queryFunctionWords(buf[:0], query), hits, words)
}

// SearchRerank is Search followed by Rerank of its hits, words(doc) being
// the function words of document doc's question: the query is analysed
// once, its function words and CJK text noted as its terms are found, so
// its text is not read a second time. The hits are those of Search then
// Rerank, bit for bit.
func (s *Scorer) SearchRerank(ctx context.Context, src Source, query string, k int, words func(doc uint64) FunctionWords) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := getTokenizer()
	t.words = true
	t.run(query)
	terms := t.strings()
	var buf [16]functionWord
	qws := buf[:0]
	if !t.sawCJK {
		for _, id := range t.fws {
			qws = addFunctionWord(qws, id)
		}
	}
	putTokenizer(t)
	hits, err := s.searchTerms(ctx, src, terms, k, 0)
	if err != nil || s.p.FunctionWordWeight <= 0 || len(hits) == 0 {
		return hits, err
	}
	s.rerank(qws, hits, func(i int) FunctionWords { return words(hits[i].Doc) })
	return hits, nil
}

// rerank is Rerank for a query of function words qws.
func (s *Scorer) rerank(qws []functionWord, hits []Hit, words func(i int) FunctionWords) {
	if len(qws) == 0 {
		return
	}
	x := s.p.FieldWeight[FieldQuestion]
	base := s.p.FunctionWordWeight * math.Exp(s.exponent()*lnLn2) * x / (x + s.p.K1) // (ln 2)^p
	var qset FunctionWords
	for i, q := range qws {
		qws[i].w = base * s.p.repeatWeight(q.n)
		qset[q.id>>6] |= 1 << (q.id & 63)
	}
	changed := false
	for i := range hits {
		h := &hits[i]
		if h.Score <= 0 || h.Relevance <= 0 {
			continue
		}
		set := words(i)
		if set[0]&qset[0]|set[1]&qset[1] == 0 {
			continue // none shared
		}
		var bonus float64
		for _, q := range qws {
			if set.has(q.id) {
				bonus += q.w
			}
		}
		if bonus <= 0 {
			continue
		}
		// The query's weight: Relevance = Score/norm (English).
		norm := h.Score / h.Relevance
		h.Relevance = (h.Score + bonus) / (norm + bonus)
		h.Score = h.Relevance * norm
		changed = true
	}
	if changed {
		sortHits(hits)
	}
}

// FunctionWords is the set of function words (the analyzer's stop words)
// of a text: bit i for functionWordList[i].
type FunctionWords [2]uint64

// FunctionWordsOf returns the function words of text, found as the
// analyzer splits words (see nextWord).
func FunctionWordsOf(text string) FunctionWords {
	var set FunctionWords
	for key, i, ok := nextWord(text, 0); ok; key, i, ok = nextWord(text, i) {
		if id, ok := functionWordID(key); ok {
			set[id>>6] |= 1 << (id & 63)
		}
	}
	return set
}

func (set FunctionWords) has(id uint8) bool { return set[id>>6]&(1<<(id&63)) != 0 }

// functionWordIDs maps the key (nextWord) of each function word to its
// index in functionWordList plus one: an open-addressing table by
// fwSlot, 0 ending a probe.
var functionWordIDs = func() (t [fwSlots]struct {
	key uint64
	id  uint8
}) {
	for i, w := range functionWordList {
		key, _, _ := nextWord(w, 0)
		j := fwSlot(key)
		for t[j].id != 0 {
			j = (j + 1) % fwSlots
		}
		t[j].key, t[j].id = key, uint8(i+1)
	}
	return t
}()

// fwSlots is the size of functionWordIDs: four slots a word, few probes.
const fwSlots = 512

func fwSlot(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> (64 - 9) }

// functionWordID returns the index of the word of key in
// functionWordList, and whether it is one.
func functionWordID(key uint64) (uint8, bool) {
	if key == 0 {
		return 0, false
	}
	for j := fwSlot(key); ; j = (j + 1) % fwSlots {
		switch e := functionWordIDs[j]; {
		case e.id == 0:
			return 0, false
		case e.key == key:
			return e.id - 1, true
		}
	}
}

// hasCJK reports whether text holds a CJK character: only a character
// from U+2E80 on can be, whose UTF-8 starts with a byte from 0xE2 on.
func hasCJK(text string) bool {
	for i := 0; i < len(text); i++ {
		if text[i] >= 0xE2 {
			for _, r := range text[i:] {
				if r >= 0x2E80 && isCJK(r) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// lnLn2 is ln(ln 2).
const lnLn2 = -0.36651292058166435

// exponent is IDFExponent as raisedIDF applies it.
func (s *Scorer) exponent() float64 {
	if s.p.IDFExponent > 0 {
		return s.p.IDFExponent
	}
	return 1
}

// functionWord is one distinct function word of a query: its id in
// functionWordList, n occurrences, weight w.
type functionWord struct {
	id uint8
	n  int
	w  float64
}

// queryFunctionWords appends to qws the distinct function words of query,
// first occurrences in order, with their counts.
func queryFunctionWords(qws []functionWord, query string) []functionWord {
	for key, i, ok := nextWord(query, 0); ok; key, i, ok = nextWord(query, i) {
		if id, ok := functionWordID(key); ok {
			qws = addFunctionWord(qws, id)
		}
	}
	return qws
}

// addFunctionWord counts one more occurrence of function word id in qws.
func addFunctionWord(qws []functionWord, id uint8) []functionWord {
	for j := range qws {
		if qws[j].id == id {
			qws[j].n++
			return qws
		}
	}
	return append(qws, functionWord{id: id, n: 1})
}

// nextWord returns the first word of text at or after i, as a key, the
// index after the word, and false when there is none. Words are split as
// the analyzer splits them: a word is a run of letters and digits with
// inner apostrophes, and anything else separates words, as a joiner
// ("how-to") separates the parts the analyzer sees. The key is the word
// lower-cased, apostrophes made straight, packed into a uint64 a byte at
// a time from the low end; 0 for a word that cannot be a stop word
// (longer than 8 bytes, or with a non-ASCII letter). ASCII text is read
// a byte at a time, without decoding.
func nextWord(text string, i int) (uint64, int, bool) {
	for { // to the word
		if i >= len(text) {
			return 0, i, false
		}
		c := text[i]
		if asciiWord[c] != 0 {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		k, _, size := class(text, i)
		if k == classLetter {
			break
		}
		i += size
	}
	var key uint64
	n := uint(0) // bytes so far; from the 9th, the shift leaves key as it is
	for i < len(text) {
		b := text[i]
		if lb := asciiWord[b]; lb != 0 { // the common case
			key |= uint64(lb) << (8 * n)
			n++
			i++
			continue
		}
		if b < utf8.RuneSelf && b != '\'' {
			break // an ASCII separator
		}
		c, b, size := class(text, i)
		switch c {
		case classApos:
			// Inner apostrophes only: "don't", not "users'".
			if i+size >= len(text) {
				return wordKey(key, n), i, true
			}
			if nc, _, _ := class(text, i+size); nc != classLetter {
				return wordKey(key, n), i, true
			}
		case classLetter:
			if b == 0 {
				n = 9 // a non-ASCII letter: no stop word
			} else {
				b = asciiWord[b]
			}
		default:
			return wordKey(key, n), i, true
		}
		key |= uint64(b) << (8 * n)
		n++
		i += size
	}
	return wordKey(key, n), i, true
}

// wordKey is the key of a word of n bytes packed in key: 0 when they
// do not fit.
func wordKey(key uint64, n uint) uint64 {
	if n > 8 {
		return 0
	}
	return key
}

// asciiWord maps an ASCII letter or digit to itself lower-cased, every
// other byte to 0.
var asciiWord = func() (t [256]byte) {
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c)
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = byte(c), byte(c)
	}
	return t
}()

// Byte classes of words.
const (
	classSep = iota
	classLetter
	classApos
)

// class returns the class of the character of text at i, the character
// when it is ASCII (full-width forms folded; else 0), and its size in
// bytes.
func class(text string, i int) (int, byte, int) {
	c := text[i]
	if c < utf8.RuneSelf {
		return wordClass(c), c, 1
	}
	r, size := next(text, i)
	switch {
	case r == '’':
		return classApos, '\'', size
	case r < utf8.RuneSelf: // a full-width form, folded
		return wordClass(byte(r)), byte(r), size
	case !isCJK(r) && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)):
		return classLetter, 0, size
	}
	return classSep, 0, size
}

// wordClass is the class of an ASCII byte within a function word.
func wordClass(c byte) int {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return classLetter
	case c == '\'':
		return classApos
	}
	return classSep
}

// RerankMatches is Rerank for a store's answer: ms are the matches of a
// search for query, the records read, and score(i) is the raw Score the
// search gave ms[i]'s hit. Only Relevance changes (by Rerank's rule, from
// the function words of ms[i].Question); the caller ranks ms again with
// core.Rank, which weighs relevance with trust as before. Both stores call
// it on the matches they answer with, so that they rank alike.
func (s *Scorer) RerankMatches(query string, ms []core.Match, score func(i int) float64) {
	if s.p.FunctionWordWeight <= 0 || len(ms) == 0 {
		return
	}
	hits := make([]Hit, len(ms))
	for i := range ms {
		hits[i] = Hit{Doc: uint64(i), Score: score(i), Relevance: ms[i].Relevance}
	}
	s.Rerank(query, hits, func(i int) FunctionWords { return FunctionWordsOf(ms[hits[i].Doc].Question) })
	for _, h := range hits {
		ms[h.Doc].Relevance = h.Relevance
	}
}
