package retrieval

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

func TestFunctionWords(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"How do I exchange currency?", []string{"how", "do", "i"}},
		{"Don’t WHY how-to users' I'm x “how” don't", []string{"don't", "don't", "why", "how", "how", "to", "i'm"}},
		{"ＨＯＷ about élan theﬁ whyé", []string{"how", "about"}},
		{"wasn't theirs, the écoles", []string{"the"}},
		{"goroutine 越来越多 what is it", []string{"what", "is", "it"}},
		{"ThereIs parseConfig themselves", nil},
		{"", nil},
	} {
		var got []string
		for _, q := range queryFunctionWords(nil, tc.text) {
			for range q.n {
				got = append(got, functionWordList[q.id])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: function words %q, want %q", tc.text, got, tc.want)
		}
	}
}

// rerankQuestions are questions with the same indexed terms ("exchang",
// "currenc") and different function words.
var rerankQuestions = []string{
	"Which currency will you exchange?",
	"What currencies can I exchange?",
	"How do I exchange currency?",
	"how to exchange currencies",
}

func rerankSearch(t *testing.T, p Params, query string) []Hit {
	t.Helper()
	a := NewAnalyzer()
	idx := NewMemIndex(a)
	for i, q := range rerankQuestions {
		idx.Add(uint64(i), q, "")
	}
	s := NewScorer(a, p)
	hits, err := s.Search(context.Background(), idx, query, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != len(rerankQuestions) {
		t.Fatalf("%d hits, want %d", len(hits), len(rerankQuestions))
	}
	for _, h := range hits[1:] {
		if h.Score != hits[0].Score {
			t.Fatalf("hits %v: want a tie on the content terms", hits)
		}
	}
	s.Rerank(query, hits, func(i int) FunctionWords { return FunctionWordsOf(rerankQuestions[hits[i].Doc]) })
	return hits
}

// TestRerankFunctionWords: the content terms tie; the function words the
// query shares with each question order them, and raise the Relevance of
// those that share some only.
func TestRerankFunctionWords(t *testing.T) {
	const query = "How do I exchange currency?"
	off := DefaultParams()
	off.FunctionWordWeight = 0
	plain := rerankSearch(t, off, query)
	if got := docs(plain); !slices.Equal(got, []uint64{0, 1, 2, 3}) {
		t.Fatalf("FunctionWordWeight 0: order %v, want the tie's 0 1 2 3", got)
	}
	hits := rerankSearch(t, DefaultParams(), query)
	// 2 shares how, do, i; 1 (i) and 3 (how) one each; 0 none.
	if got := docs(hits); !slices.Equal(got, []uint64{2, 1, 3, 0}) {
		t.Fatalf("order %v, want 2 1 3 0", got)
	}
	r0 := plain[0].Relevance
	if hits[3].Relevance != r0 || hits[3].Score != plain[0].Score {
		t.Errorf("the hit sharing no function word: %+v, want it unchanged (%+v)", hits[3], plain[0])
	}
	if !(hits[0].Relevance > hits[1].Relevance && hits[1].Relevance == hits[2].Relevance && hits[2].Relevance > r0 && hits[0].Relevance < 1) {
		t.Errorf("relevances %v %v %v %v: want decreasing from below 1 to %v, 1 and 3 equal", hits[0].Relevance, hits[1].Relevance, hits[2].Relevance, hits[3].Relevance, r0)
	}
	// A query with CJK text is not re-ranked (its Relevance is calibrated).
	plain = rerankSearch(t, off, query+" 汇率")
	hits = rerankSearch(t, DefaultParams(), query+" 汇率")
	if !slices.Equal(hits, plain) {
		t.Errorf("CJK text: %v, want %v", hits, plain)
	}
	// A query without function words leaves the hits as they are.
	plain = rerankSearch(t, off, "exchange currency")
	hits = rerankSearch(t, DefaultParams(), "exchange currency")
	if !slices.Equal(hits, plain) {
		t.Errorf("no function words: %v, want %v", hits, plain)
	}
}

// TestRerankMatches: a store's matches get Rerank's relevances, in their
// own order (the caller ranks them again).
func TestRerankMatches(t *testing.T) {
	const query = "How do I exchange currency?"
	hits := rerankSearch(t, DefaultParams(), query)
	off := DefaultParams()
	off.FunctionWordWeight = 0
	plain := rerankSearch(t, off, query)
	ms := make([]core.Match, len(rerankQuestions))
	for i, q := range rerankQuestions {
		ms[i] = core.Match{QAID: q, Question: q, Relevance: plain[0].Relevance}
	}
	s := NewScorer(NewAnalyzer(), DefaultParams())
	s.RerankMatches(query, ms, func(int) float64 { return plain[0].Score })
	for _, h := range hits {
		if m := ms[h.Doc]; m.Relevance != h.Relevance {
			t.Errorf("%q: relevance %v, want Rerank's %v", m.Question, m.Relevance, h.Relevance)
		}
	}
}

// stopWords are the English stop words the analyzer drops.
var stopWords = []string{
	"a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
	"be", "been", "before", "being", "both", "but", "by",
	"can", "could", "did", "do", "does", "doing", "don't", "each", "few", "for", "from", "further",
	"had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
	"i", "i'm", "i've", "if", "in", "into", "is", "it", "it's", "its", "itself",
	"just", "me", "more", "most", "my", "myself", "of", "on", "once", "only", "or", "other", "our", "ours", "out", "own",
	"same", "she", "should", "so", "some", "such",
	"than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
	"very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
	"you", "your", "yours",
}

// TestFunctionWordList: the list that numbers the function words holds
// the stop words, each once, and stopwordID knows exactly those.
func TestFunctionWordList(t *testing.T) {
	list := slices.Clone(functionWordList[:])
	slices.Sort(list)
	if !slices.Equal(list, slices.Sorted(slices.Values(stopWords))) || len(slices.Compact(list)) != len(functionWordList) {
		t.Fatalf("functionWordList %q, want the stop words %q, each once", list, stopWords)
	}
	for i, w := range functionWordList {
		if id, ok := stopwordID([]byte(w)); !ok || int(id) != i {
			t.Errorf("stopwordID(%q) = %d, %v; want %d, true", w, id, ok, i)
		}
	}
	// Near misses are not stop words.
	var others []string
	for _, w := range stopWords {
		others = append(others, w[:len(w)-1], w+"s", w+"\x00", "\x00"+w, strings.ToUpper(w), "x"+w, w+w)
	}
	for _, tc := range stemTable {
		others = append(others, tc.word)
	}
	others = append(others, "", "not", "no", "theirs", "themselves", "yourself", "\x00")
	for _, w := range others {
		if _, ok := stopwordID([]byte(w)); ok != slices.Contains(stopWords, w) {
			t.Errorf("stopwordID(%q): %v", w, ok)
		}
	}
	if len(functionWordList) > 128 {
		t.Fatalf("%d function words: FunctionWords holds 128", len(functionWordList))
	}
	for i, w := range functionWordList {
		set := FunctionWordsOf("x " + strings.ToUpper(w) + " y")
		var want FunctionWords
		want[i>>6] |= 1 << (i & 63)
		if set != want {
			t.Errorf("FunctionWordsOf(%q) = %x, want %x", w, set, want)
		}
	}
}

// textFunctionWords returns the function words the analyzer records for
// text, in order with repeats, and whether it saw CJK text.
func textFunctionWords(text string) ([]uint8, bool) {
	t := getTokenizer()
	defer putTokenizer(t)
	t.words = true
	t.run(text)
	return slices.Clone(t.fws), t.sawCJK
}

// scannedFunctionWords returns the function words nextWord finds in
// text, in order with repeats.
func scannedFunctionWords(text string) []uint8 {
	var ids []uint8
	for key, i, ok := nextWord(text, 0); ok; key, i, ok = nextWord(text, i) {
		if id, ok := functionWordID(key); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// checkFunctionWords fails unless the analyzer's pass over text records
// the function words a scan of text finds, and notes CJK text as hasCJK.
func checkFunctionWords(t *testing.T, text string) {
	t.Helper()
	got, cjk := textFunctionWords(text)
	if want := scannedFunctionWords(text); !slices.Equal(got, want) {
		t.Errorf("%q: analyzer records function words %v, a scan finds %v", text, got, want)
	}
	if cjk != hasCJK(text) {
		t.Errorf("%q: analyzer saw CJK %v, hasCJK %v", text, cjk, hasCJK(text))
	}
}

var functionWordTexts = []string{
	"How do I exchange currency?",
	"Don’t WHY how-to users' I'm x “how” don't",
	"ＨＯＷ about élan theﬁ whyé",
	"wasn't theirs, the écoles",
	"goroutine 越来越多 what is it",
	"ThereIs parseConfig themselves iPhone oN MY doN't HowTo",
	"İf İ can ǅo it, ’tis the user’s",
	"/usr/how/to.the/x-is_an:it --and-- a.b.c why'd it''s it' 'it",
	"std::io::Error e.g. --force v1.2.3 0x1f is 404 a1 on",
	"ＡＢＣ　１２３ café ｈｏｗ．ｔｏ Ｉ＇ｍ",
	"内存泄漏怎么办 日本語 한국어 how",
	"\xc3\xe4\xb8\xad how \xff the",
	"",
}

// TestAnalyzerFunctionWords: the analyzer's pass over a query finds its
// function words as the re-rank's scan of the query does, camelCase and
// compounds included.
func TestAnalyzerFunctionWords(t *testing.T) {
	for _, text := range functionWordTexts {
		checkFunctionWords(t, text)
	}
}

// TestSearchRerank: SearchRerank's hits are Search's re-ranked by Rerank,
// bit for bit.
func TestSearchRerank(t *testing.T) {
	a := NewAnalyzer()
	idx := NewMemIndex(a)
	docs := append(slices.Clone(rerankQuestions), functionWordTexts...)
	docs = append(docs, "how to exchange 汇率", "exchange the currency of it", "ThereIs how oN exchange")
	for i, q := range docs {
		idx.Add(uint64(i), q, "")
	}
	words := func(doc uint64) FunctionWords { return FunctionWordsOf(docs[doc]) }
	queries := append(slices.Clone(functionWordTexts), rerankQuestions...)
	queries = append(queries, "How do I exchange currency? 汇率", "exchange currency", "oN exchange ThereIs how", "the")
	ctx := context.Background()
	for _, fww := range []float64{DefaultParams().FunctionWordWeight, 0} {
		p := DefaultParams()
		p.FunctionWordWeight = fww
		s := NewScorer(a, p)
		reranked := 0
		for _, q := range queries {
			want, err := s.Search(ctx, idx, q, 5)
			if err != nil {
				t.Fatal(err)
			}
			plain := slices.Clone(want)
			s.Rerank(q, want, func(i int) FunctionWords { return words(want[i].Doc) })
			if !slices.Equal(want, plain) {
				reranked++
			}
			got, err := s.SearchRerank(ctx, idx, q, 5, words)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("weight %v, %q: SearchRerank %v, want %v", fww, q, got, want)
			}
		}
		if fww > 0 && reranked < 5 {
			t.Errorf("only %d queries re-ranked: the test compares too little", reranked)
		}
	}
}
