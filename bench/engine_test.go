package bench

import (
	"slices"
	"strings"
	"testing"
)

// tinyCorpus mixes English technical QAs and Chinese ones.
var tinyCorpus = []Record{
	{ID: "t0", Question: "How do I fix a memory leak in a Go service?", Answer: "Profile the heap with pprof and look for goroutines that never exit."},
	{ID: "t1", Question: "Docker container exits immediately after start", Answer: "Run the main process in the foreground; check docker logs."},
	{ID: "t2", Question: "How to amend the last git commit message?", Answer: "Use git commit --amend, then force-push if it was already pushed."},
	{ID: "t3", Question: "npm install -g fails with EACCES permission denied", Answer: "Change npm's prefix to a directory you own instead of using sudo."},
	{ID: "t4", Question: "nginx returns 502 Bad Gateway", Answer: "The upstream is down or the proxy_pass port is wrong; check the upstream logs."},
	{ID: "t5", Question: "如何解决 Go 程序中的内存泄漏？", Answer: "使用 pprof 查看堆内存分配，检查没有退出的 goroutine。"},
	{ID: "t6", Question: "Docker 容器启动后立即退出怎么办？", Answer: "先看 docker logs 的输出，确认主进程在前台运行。"},
	{ID: "t7", Question: "数据库查询很慢，如何优化？", Answer: "为过滤条件建立索引，用 EXPLAIN 查看执行计划。"},
	{ID: "t8", Question: "SSH login asks for a password every time", Answer: "Copy your public key with ssh-copy-id and check ~/.ssh permissions."},
	{ID: "t9", Question: "Port 8080 is already in use", Answer: "Find the process with lsof -i :8080 or ss -ltnp and stop it."},
}

func TestEnginesFindExactQuestionFirst(t *testing.T) {
	for _, f := range Factories() {
		t.Run(f.Name, func(t *testing.T) {
			e, err := f.New()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := e.Close(); err != nil {
					t.Error(err)
				}
			})
			if e.Name() != f.Name {
				t.Errorf("Name() = %q, want %q", e.Name(), f.Name)
			}
			if err := e.Build(tinyCorpus); err != nil {
				t.Fatal(err)
			}
			for i, d := range tinyCorpus {
				got, err := e.Search(d.Question, 5)
				if err != nil {
					t.Fatalf("search %s: %v", d.ID, err)
				}
				if len(got) == 0 || got[0] != i {
					t.Errorf("search %q = %v, want %d first", d.Question, got, i)
				}
				if len(got) > 5 {
					t.Errorf("search %s returned %d hits, asked for 5", d.ID, len(got))
				}
			}
			// A paraphrase that shares only answer words still finds its QA.
			got, err := e.Search("pprof heap goroutines", 3)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(got, 0) {
				t.Errorf("answer-word search = %v, want QA 0 among them", got)
			}
			// A query with no known word finds nothing.
			got, err = e.Search("zzzqqq", 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Errorf("unknown-word search = %v, want none", got)
			}
		})
	}
}

func TestMeasureScoresAndTimes(t *testing.T) {
	set := &Set{Name: "tiny", Corpus: tinyCorpus}
	for _, d := range tinyCorpus {
		set.Queries = append(set.Queries, Query{ID: d.ID, Query: d.Question, Relevant: []string{d.ID}})
	}
	opt := Options{K: 10, LatencySamples: 50, LatencyBudget: 1e9, QPSDuration: 5e7}
	res, err := Measure(Factories()[0], set, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Quality.Queries != len(tinyCorpus) || res.Quality.MRR10 != 1 {
		t.Errorf("quality = %+v, want every query's own QA first", res.Quality)
	}
	if len(res.RR) != len(tinyCorpus) {
		t.Errorf("%d per-query RRs, want %d", len(res.RR), len(tinyCorpus))
	}
	s := res.Speed
	if s.Samples != 50 || s.P50 <= 0 || s.P99 < s.P50 || s.QPS2 <= 0 || s.Build <= 0 {
		t.Errorf("speed = %+v", s)
	}
}

func TestFTS5Query(t *testing.T) {
	tests := []struct {
		name, in string
		stop     bool
		want     string
	}{
		{"words", "Docker container exits!", false, `"docker" OR "container" OR "exits"`},
		{"dedupe", "go Go GO", false, `"go"`},
		{"cjk bigrams", "内存泄漏", false, `"内 存" OR "存 泄" OR "泄 漏"`},
		{"lone cjk", "用 npm", false, `"用" OR "npm"`},
		{"mixed", "Go服务", false, `"go" OR "服 务"`},
		{"quotes dropped", `say "hi" OR 'x'`, false, `"say" OR "hi" OR "or" OR "x"`},
		{"stop words kept", "How do I fix the leak?", false, `"how" OR "do" OR "i" OR "fix" OR "the" OR "leak"`},
		{"stop words dropped", "How do I fix the leak?", true, `"fix" OR "leak"`},
		{"only stop words kept", "what is it", true, `"what" OR "is" OR "it"`},
		{"empty", " ?! ", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FTS5Query(tc.in, tc.stop); got != tc.want {
				t.Errorf("FTS5Query(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitCJK(t *testing.T) {
	if got := splitCJK("用 pprof查看内存"); strings.Fields(got)[0] != "用" || !strings.Contains(got, " 查 看 内 存") || !strings.Contains(got, "pprof ") {
		t.Errorf("splitCJK = %q", got)
	}
}

func TestMedianSpeed(t *testing.T) {
	got := MedianSpeed([]Speed{{P50: 3, QPS2: 10}, {P50: 1, QPS2: 30}, {P50: 2, QPS2: 20}})
	if got.P50 != 2 || got.QPS2 != 20 {
		t.Errorf("MedianSpeed = %+v, want P50 2 and QPS 20", got)
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, b := SyntheticSet(200, 5, 3), SyntheticSet(200, 5, 3)
	zh := 0
	for i, r := range a.Corpus {
		if r != b.Corpus[i] {
			t.Fatalf("record %d differs", i)
		}
		if r.Question == "" || r.Answer == "" {
			t.Fatalf("record %d empty: %+v", i, r)
		}
		if r.Lang == "zh" {
			zh++
		}
	}
	if zh == 0 || zh > 60 {
		t.Errorf("%d of 200 records are Chinese, want about 1 in 10", zh)
	}
	if len(a.Queries) != 5 || a.Queries[0].Query != b.Queries[0].Query || len(a.Queries[0].Query) < 60 {
		t.Errorf("queries %q / %q", a.Queries[0].Query, b.Queries[0].Query)
	}
}
