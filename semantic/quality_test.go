package semantic

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The toy paraphrase set: each query's relevant QA shares few words with it
// (it says "delete" where the query says "erase"), while distractors share
// the surface words. The fake model knows the synonyms; the lexical scorer
// does not. It measures the fusion mechanics, not a real model.
var qualityDocs = map[string]string{
	"git-del":      "delete a local branch with git branch -d and a remote one with git push origin --delete",
	"git-name":     "git branch naming conventions for a team",
	"git-rebase":   "git rebase a branch onto main without losing work",
	"docker-slow":  "docker build is fast again after ordering the layers to use the cache",
	"docker-ports": "docker build arguments and ports in a compose file",
	"go-test-fail": "go test failure: race detected during execution of test, run with -race and fix the data race",
	"go-test-name": "go test run a single test by name with -run",
	"npm-install":  "npm install fails with EACCES: do not use sudo, fix the npm prefix permissions",
	"npm-audit":    "npm audit report explains vulnerabilities in packages",
	"py-venv":      "python venv setup: python -m venv .venv then activate it",
	"py-version":   "python version of a venv is fixed when it is created",
	"k8s-crash":    "pod crash loop backoff: read the logs of the previous container with kubectl logs --previous",
	"k8s-logs":     "kubectl logs of a pod in a namespace",
	"git-erase":    "erase a commit from git history with filter-repo",
	"docker-tag":   "make a docker image tag for a release",
	"npm-error":    "npm error codes and what each error means",
	"npm-global":   "npm install a package globally",
	"py-error":     "python error: venv module not found on debian",
}

var qualityQueries = []struct{ q, rel string }{
	{"how do I erase a git branch", "git-del"},
	{"remove remote git branch", "git-del"},
	{"docker build slow cache", "docker-slow"},
	{"make docker image build quicker", "docker-slow"},
	{"go test crashes with data race", "go-test-fail"},
	{"npm install error permission", "npm-install"},
	{"installing python venv", "py-venv"},
	{"pod crashes repeatedly kubectl logs", "k8s-crash"},
	{"git branch naming", "git-name"},
	{"kubectl logs namespace", "k8s-logs"},
}

func toyTokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !fakeStop[w] {
			out[w] = true
		}
	}
	return out
}

// toyLexical is the idf-weighted fraction of the query's words found in
// the doc, in [0,1]: rare shared words count more, as in BM25.
func toyLexical(q, d string) float64 {
	qt, dt := toyTokens(q), toyTokens(d)
	var got, all float64
	for w := range qt {
		df := 0
		for _, text := range qualityDocs {
			if toyTokens(text)[w] {
				df++
			}
		}
		idf := math.Log(1 + float64(len(qualityDocs))/float64(1+df))
		all += idf
		if dt[w] {
			got += idf
		}
	}
	if all == 0 {
		return 0
	}
	return got / all
}

func lexicalCandidates(q string) []Candidate {
	var cs []Candidate
	for id, text := range qualityDocs {
		if l := toyLexical(q, text); l > 0 {
			cs = append(cs, Candidate{ID: id, Text: text, Lexical: l})
		}
	}
	slices.SortFunc(cs, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(b.Lexical, a.Lexical), strings.Compare(a.ID, b.ID))
	})
	return cs
}

func mrr(t testing.TB, rank func(q string, cs []Candidate) []Candidate) float64 {
	var sum float64
	for _, qq := range qualityQueries {
		got := rank(qq.q, lexicalCandidates(qq.q))
		if i := slices.IndexFunc(got, func(c Candidate) bool { return c.ID == qq.rel }); i >= 0 && i < 10 {
			sum += 1 / float64(i+1)
		}
	}
	return sum / float64(len(qualityQueries))
}

// TestFusionQuality measures MRR@10 on the toy set for lexical only, linear
// fusion and RRF (go test -run FusionQuality -v ./semantic).
func TestFusionQuality(t *testing.T) {
	e := &fakeEmbedder{dims: fakeDims}
	lexical := mrr(t, func(_ string, cs []Candidate) []Candidate { return cs })
	fused := func(f Fusion, w float64) float64 {
		return mrr(t, func(q string, cs []Candidate) []Candidate {
			out, err := Rerank(t.Context(), e, q, cs, w, WithFusion(f))
			if err != nil {
				t.Fatal(err)
			}
			return out
		})
	}
	t.Logf("MRR@10 lexical only      %.3f", lexical)
	best := map[Fusion]float64{}
	for _, f := range []Fusion{FusionLinear, FusionRRF} {
		for _, w := range []float64{0.1, 0.3, 0.5, 0.7} {
			m := fused(f, w)
			best[f] = max(best[f], m)
			t.Logf("MRR@10 %-6s w=%.1f      %.3f", f, w, m)
		}
	}
	if lexical > 0.9 {
		t.Fatalf("toy set too easy lexically (%.3f): it measures nothing", lexical)
	}
	if lin := fused(FusionLinear, DefaultWeight); lin <= lexical {
		t.Errorf("linear fusion at the default weight (%.3f) does not beat lexical (%.3f)", lin, lexical)
	}
	if best[FusionRRF] <= lexical {
		t.Errorf("RRF (best %.3f) does not beat lexical (%.3f)", best[FusionRRF], lexical)
	}
}
