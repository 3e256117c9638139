package retrieval

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
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

// TestFunctionWordList: the list that numbers the function words holds
// exactly the words isStopword's switch names, each once.
func TestFunctionWordList(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "stopwords.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	ast.Inspect(f, func(n ast.Node) bool {
		if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name != "isStopword" {
			return false
		}
		if cc, ok := n.(*ast.CaseClause); ok {
			for _, e := range cc.List {
				s, err := strconv.Unquote(e.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, s)
			}
		}
		return true
	})
	list := slices.Clone(functionWordList[:])
	slices.Sort(cases)
	slices.Sort(list)
	if !slices.Equal(cases, list) || len(slices.Compact(list)) != len(functionWordList) {
		t.Fatalf("functionWordList %q, want isStopword's %q, each once", list, cases)
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
