package retrieval

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxTermLen is the longest term, in bytes, the analyzer emits; longer
// tokens (hashes, base64 blobs) are dropped as whole terms but their parts
// are still indexed.
const MaxTermLen = 64

// Analyzer turns text into index terms. It is stateless, deterministic and
// safe for concurrent use. The rules:
//
//   - English words are lower-cased, stopwords dropped and the rest stemmed
//     with the Snowball English (Porter2) stemmer: "Running" → "run".
//   - Words with digits or non-ASCII letters are lower-cased, not stemmed:
//     "ENOENT" → "enoent", "E0308" → "e0308", "0x1f" → "0x1f", "404".
//   - A token joined by '.', '/', '\', ':', '-' or '_', or written in
//     camelCase/PascalCase, is a compound: its whole lower-cased form is a
//     term and so is each part, processed as a word. "pkg.Func" → "pkg.func",
//     "pkg", "func"; "/usr/lib/x.so" → "usr/lib/x.so", "usr", "lib", "x",
//     "so"; "parseHTTPHeader" → "parsehttpheader", "pars", "http", "header".
//     Leading and trailing joiners are trimmed ("--force" → "forc").
//   - Han, Hiragana, Katakana and Hangul runs become their characters and
//     overlapping character pairs: "内存泄漏" → 内, 内存, 存, 存泄, 泄, 泄漏, 漏
//     (a few very common Chinese function characters are not emitted as
//     single characters; their pairs are).
//   - Full-width ASCII forms are folded to ASCII; everything else
//     (whitespace, punctuation, symbols) separates tokens.
type Analyzer struct{}

// NewAnalyzer returns the default analyzer.
func NewAnalyzer() *Analyzer { return &Analyzer{} }

// Terms returns the index terms of text, in order, with repeats.
func (a *Analyzer) Terms(text string) []string {
	t := getTokenizer()
	defer putTokenizer(t)
	t.run(text)
	return t.strings()
}

// Analyze builds the document of a QA.
func (a *Analyzer) Analyze(question, answer string) Doc {
	d := Doc{}
	var ts [NumFields]*tokenizer
	n := 0
	for f, text := range [NumFields]string{question, answer} {
		ts[f] = getTokenizer()
		defer putTokenizer(ts[f])
		ts[f].run(text)
		n += len(ts[f].ends)
	}
	d.Terms = make(map[string]TF, n/2+1)
	for f := range ts {
		for _, term := range ts[f].strings() {
			tf := d.Terms[term]
			tf[f]++
			d.Terms[term] = tf
		}
		d.Len[f] = uint32(len(ts[f].ends))
	}
	return d
}

// tokenizer accumulates the terms of one text in a single byte arena so
// that converting them to strings costs one allocation. Tokenizers are
// pooled with their buffers (strings copies the terms out).
type tokenizer struct {
	arena []byte
	ends  []int32
	wbuf  []byte // scratch: the current simple word, lower-cased
	cjk   []rune // scratch: the current CJK run

	// With words set, run also records the text's function words (the
	// stop words it drops), in order with repeats, as nextWord finds
	// them, and whether the text has CJK text (hasCJK): what the re-rank
	// needs of a query, found in the same pass as its terms.
	words  bool
	fws    []uint8 // ids in functionWordList
	sawCJK bool
}

// tokenizers holds idle tokenizers: an analysis then allocates only the
// strings it returns, whatever the script (Chinese text makes three bytes
// of terms for each of its own).
var tokenizers = sync.Pool{New: func() any { return new(tokenizer) }}

// maxPooledArena bounds the arena of a tokenizer put back in the pool, so
// that one huge text does not keep its buffers alive.
const maxPooledArena = 64 << 10

func getTokenizer() *tokenizer { return tokenizers.Get().(*tokenizer) }

func putTokenizer(t *tokenizer) {
	if cap(t.arena) > maxPooledArena || cap(t.ends) > maxPooledArena/4 {
		return
	}
	t.arena, t.ends = t.arena[:0], t.ends[:0]
	t.words, t.fws, t.sawCJK = false, t.fws[:0], false
	tokenizers.Put(t)
}

func (t *tokenizer) strings() []string {
	if len(t.ends) == 0 {
		return nil
	}
	s := string(t.arena)
	out := make([]string, len(t.ends))
	start := int32(0)
	for i, e := range t.ends {
		out[i] = s[start:e]
		start = e
	}
	return out
}

// emit appends term; empty and over-long terms are dropped.
func (t *tokenizer) emit(term []byte) {
	if len(term) == 0 || len(term) > MaxTermLen {
		return
	}
	t.arena = append(t.arena, term...)
	t.ends = append(t.ends, int32(len(t.arena)))
}

// rune classes
const (
	clSep = iota
	clWord
	clJoin // joiner inside compounds: . / \ : - _
	clApos
	clCJK
)

// asciiClass is the class of each ASCII rune.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			t[r] = clWord
		case r == '.', r == '/', r == '\\', r == ':', r == '-', r == '_':
			t[r] = clJoin
		case r == '\'':
			t[r] = clApos
		default:
			t[r] = clSep
		}
	}
	return t
}()

// classify returns the class of r: inlined for ASCII.
func classify(r rune) int {
	if r < utf8.RuneSelf {
		return int(asciiClass[r])
	}
	return classifyRune(r)
}

// classifyRune is classify beyond ASCII.
func classifyRune(r rune) int {
	switch {
	case r == '’':
		return clApos
	case isCJK(r):
		return clCJK
	case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r):
		return clWord
	}
	return clSep
}

func isCJK(r rune) bool {
	switch {
	case r < 0x2E80:
		return false
	case 0x4E00 <= r && r <= 0x9FFF, // CJK unified ideographs
		0x3400 <= r && r <= 0x4DBF,                // extension A
		0x3041 <= r && r <= 0x30FF && r != 0x30FB, // hiragana, katakana (not the middle dot)
		0xAC00 <= r && r <= 0xD7A3,                // hangul syllables
		0xF900 <= r && r <= 0xFAFF:                // compatibility ideographs
		return true
	case r == 0x3005 || r == 0x3007: // 々 〇
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// foldWidth maps full-width ASCII forms (U+FF01–U+FF5E) to ASCII.
func foldWidth(r rune) rune {
	if 0xFF01 <= r && r <= 0xFF5E {
		return r - 0xFEE0
	}
	return r
}

func (t *tokenizer) run(text string) {
	if t.arena == nil {
		t.arena = make([]byte, 0, len(text)+len(text)/2+16)
		t.ends = make([]int32, 0, len(text)/4+4)
		t.wbuf = make([]byte, 0, 64)
	}
	i := 0
	for i < len(text) {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
			r = foldWidth(r)
		}
		switch c := classify(r); {
		case c == clWord, c == clJoin && size == 1:
			i = t.chunk(text, i)
		case c == clCJK:
			i = t.cjkRun(text, i)
		default:
			i += size
		}
	}
}

// next decodes the (width-folded) rune at i.
func next(text string, i int) (rune, int) {
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	r, size := utf8.DecodeRuneInString(text[i:])
	return foldWidth(r), size
}

// chunk consumes a maximal run of word, joiner and inner apostrophe runes
// starting at i and emits its terms. It returns the index after the run.
func (t *tokenizer) chunk(text string, i int) int {
	start := i
	end := i
	for end < len(text) {
		r, size := next(text, end)
		c := classify(r)
		if c == clApos {
			// An apostrophe belongs to the token only between word runes.
			if end == start || end+size >= len(text) {
				break
			}
			pr, _ := utf8.DecodeLastRuneInString(text[:end])
			nr, _ := next(text, end+size)
			if classify(foldWidth(pr)) != clWord || classify(nr) != clWord {
				break
			}
		} else if c != clWord && (c != clJoin || size > 1) {
			// Full-width joiners separate: compounds use ASCII joiners.
			break
		}
		end += size
	}
	// Trim joiners at both ends.
	s, e := start, end
	for s < e && isJoinByte(text[s]) {
		s++
	}
	for e > s && isJoinByte(text[e-1]) {
		e--
	}
	if s == e {
		return end
	}
	tok := text[s:e]
	if !isCompound(tok) {
		t.word1(tok)
		return end
	}
	// Whole compound, lower-cased, then its segments and parts.
	t.emitLower(tok)
	// Path segments (between '/' or '\') that are compounds themselves
	// ("nginx.conf" in "/etc/nginx/nginx.conf") are terms too.
	p := 0
	for k := 0; k <= len(tok); k++ {
		if k == len(tok) || tok[k] == '/' || tok[k] == '\\' {
			if seg := trimJoins(tok[p:k]); len(seg) < len(tok) {
				t.segment(seg)
			} else {
				t.parts(seg)
			}
			p = k + 1
		}
	}
	return end
}

// segment emits a path segment: whole when it is a compound, then its parts.
func (t *tokenizer) segment(seg string) {
	if isCompound(seg) {
		t.emitLower(seg)
	}
	t.parts(seg)
}

// parts emits each joiner-separated part of tok as a word.
func (t *tokenizer) parts(tok string) {
	p := 0
	for k := 0; k <= len(tok); k++ {
		if k == len(tok) || isJoinByte(tok[k]) {
			if k > p {
				t.word1(tok[p:k])
			}
			p = k + 1
		}
	}
}

func trimJoins(s string) string {
	for len(s) > 0 && isJoinByte(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isJoinByte(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// emitLower emits s lower-cased as one term.
func (t *tokenizer) emitLower(s string) {
	mark := len(t.arena)
	t.arena = appendLower(t.arena, s)
	if n := len(t.arena) - mark; n > 0 && n <= MaxTermLen {
		t.ends = append(t.ends, int32(len(t.arena)))
	} else {
		t.arena = t.arena[:mark]
	}
}

// isCompound reports whether term is the whole of a compound joined by
// punctuation: only those terms hold a joiner (a word never does, and
// leading and trailing joiners are trimmed).
func isCompound(term string) bool {
	for k := 0; k < len(term); k++ {
		if isJoinByte(term[k]) {
			return true
		}
	}
	return false
}

func isJoinByte(c byte) bool {
	switch c {
	case '.', '/', '\\', ':', '-', '_':
		return true
	}
	return false
}

// word1 handles a token without joiners: camelCase splitting, then words.
func (t *tokenizer) word1(tok string) {
	// Find camel-case boundaries: lower→Upper, and Upper→Upper+lower
	// (HTTPServer → HTTP|Server). ASCII only.
	nb := 0
	for k := 1; k < len(tok); k++ {
		if camelBoundary(tok, k) {
			nb++
		}
	}
	if nb == 0 {
		t.word(tok, t.words)
		return
	}
	if t.words {
		// The re-rank reads tok as one word: "oN" is "on".
		t.functionWord(tok)
	}
	t.emitLower(tok)
	p := 0
	for k := 1; k <= len(tok); k++ {
		if k == len(tok) || camelBoundary(tok, k) {
			t.word(tok[p:k], false)
			p = k
		}
	}
}

// allUpper reports whether tok (ASCII letters) has at least two letters, all
// upper-case.
func allUpper(tok string) bool {
	if len(tok) < 2 {
		return false
	}
	for k := 0; k < len(tok); k++ {
		if isLower(tok[k]) {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }

func camelBoundary(tok string, k int) bool {
	c := tok[k]
	if !isUpper(c) {
		return false
	}
	p := tok[k-1]
	if isLower(p) {
		return true
	}
	return isUpper(p) && k+1 < len(tok) && isLower(tok[k+1])
}

// word emits one simple word: stopwords dropped, ASCII-letter words stemmed,
// anything else lower-cased. With fw, a stop word is recorded as a function
// word.
func (t *tokenizer) word(tok string, fw bool) {
	t.wbuf = appendLower(t.wbuf[:0], tok)
	letters := true
	for _, c := range t.wbuf {
		if !isLower(c) && c != '\'' {
			letters = false
			break
		}
	}
	if !letters {
		t.emit(t.wbuf)
		return
	}
	if id, ok := stopwordID(t.wbuf); ok {
		if fw {
			if len(tok) == len(t.wbuf) {
				// ASCII: tok's key is that of its lower-cased bytes.
				t.fws = append(t.fws, id)
			} else {
				t.functionWord(tok)
			}
		}
		return
	}
	if negated(t.wbuf) {
		// "wasn't", "can't", "won't": the auxiliary is a stopword and the
		// negation is "not" (kept: error messages depend on it). Left as
		// one word, "wasnt" would be a rare, heavily weighted term.
		t.emit(notTerm)
		return
	}
	mark := len(t.arena)
	if allUpper(tok) {
		// Acronyms and error names (ENOENT, EACCES, HTTP) are kept as written.
		t.arena = append(t.arena, t.wbuf...)
	} else {
		t.arena = stem(t.arena, t.wbuf)
	}
	// Strip apostrophes the stemmer left ("o'clock" → "oclock").
	out := t.arena[mark:]
	w := 0
	for _, c := range out {
		if c != '\'' {
			out[w] = c
			w++
		}
	}
	t.arena = t.arena[:mark+w]
	if w == 0 || w > MaxTermLen {
		t.arena = t.arena[:mark]
		return
	}
	t.ends = append(t.ends, int32(len(t.arena)))
}

var notTerm = []byte("not")

// functionWord records tok, a word as nextWord splits them, when it is a
// function word. A stop word is not always one ("İf" lower-cases to "if",
// but nextWord keys only ASCII letters), so tok is keyed as nextWord keys
// it; a word that is not a stop word never is one (a function word's key
// is its lower-cased text, a stop word).
func (t *tokenizer) functionWord(tok string) {
	key, _, _ := nextWord(tok, 0)
	if id, ok := functionWordID(key); ok {
		t.fws = append(t.fws, id)
	}
}

// negated reports whether w is an "n't" contraction.
func negated(w []byte) bool {
	n := len(w)
	return n > 3 && w[n-3] == 'n' && w[n-2] == '\'' && w[n-1] == 't'
}

// appendLower appends s lower-cased, with full-width forms folded and
// curly apostrophes made straight.
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if isUpper(c) {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		r = foldWidth(r)
		if r == '’' {
			r = '\''
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += size
	}
	return dst
}

// cjkRun consumes a run of CJK runes at i and emits unigrams and
// overlapping bigrams.
func (t *tokenizer) cjkRun(text string, i int) int {
	t.cjk = t.cjk[:0]
	t.sawCJK = true
	for i < len(text) {
		r, size := next(text, i)
		if !isCJK(r) {
			break
		}
		t.cjk = append(t.cjk, r)
		i += size
	}
	rs := t.cjk
	for k, r := range rs {
		if !cjkStop(r) {
			t.arena = utf8.AppendRune(t.arena, r)
			t.ends = append(t.ends, int32(len(t.arena)))
		}
		if k+1 < len(rs) {
			t.arena = utf8.AppendRune(t.arena, r)
			t.arena = utf8.AppendRune(t.arena, rs[k+1])
			t.ends = append(t.ends, int32(len(t.arena)))
		}
	}
	return i
}

// cjkStop reports the Chinese function characters too common to be useful
// as single-character terms.
func cjkStop(r rune) bool {
	switch r {
	case '的', '了', '是', '在', '和', '与', '及', '或', '吗', '呢', '吧', '啊', '呀', '也', '就', '都', '而', '着', '之', '其', '把', '被', '个', '这', '那', '么', '有', '我', '你', '一', '不', '要', '会', '能', '到', '得', '地', 'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'た', 'す', 'る':
		return true
	}
	return false
}
