package core

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRankScoreFormula(t *testing.T) {
	tests := []struct {
		name              string
		rel, trust, fresh float64
		level             int
		status            Status
		want              float64
	}{
		{"spec formula", 1, 1, 1, 4, StatusActive, 0.55 + 0.30 + 0.15 + 0.08},
		{"level boost capped at 0.08", 0, 0, 0, 3, StatusActive, 0.06},
		{"stale trust x0.7", 0, 1, 0, 0, StatusStale, 0.30 * 0.7},
		{"new candidate", 0.9, 0.26, 0, 0, StatusCandidate, 0.55*0.9 + 0.30*0.26},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RankScore(tt.rel, tt.trust, tt.fresh, tt.level, tt.status)
			if fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tt.want) {
				t.Errorf("RankScore = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRank(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []Match{
		{QAID: "low", Relevance: 0.1, Trust: 1},
		{QAID: "dep", Relevance: 1, Trust: 1, Status: StatusDeprecated},
		{QAID: "b", Relevance: 0.5, Trust: 0.5, UpdatedAt: now},
		{QAID: "a", Relevance: 0.5, Trust: 0.5, UpdatedAt: now},
		{QAID: "newer", Relevance: 0.5, Trust: 0.5, UpdatedAt: now.Add(time.Hour)},
		{QAID: "top", Relevance: 0.9, Trust: 0.5},
	}
	got := Rank(ms, 0.2, 3, true)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.QAID)
		if m.Explain == nil || m.Score == 0 {
			t.Errorf("%s: score/explain not filled", m.QAID)
		}
	}
	if strings.Join(ids, ",") != "top,newer,a" {
		t.Errorf("order = %v, want top,newer,a (deprecated and below min_score dropped, newer first on ties, then id)", ids)
	}
}

func TestSanitizeProjectID(t *testing.T) {
	tests := map[string]string{
		"github.com/Acme/My-App":     "github-com-acme-my-app",
		"/home/user/projects/my_app": "home-user-projects-my_app",
		"D:\\Code\\Test Project":     "d-code-test-project",
		"":                           "default",
		"日本語":                        "default",
		"--__--":                     "default",
		strings.Repeat("ab/", 40):    strings.TrimRight(strings.Repeat("ab-", 22)[:64], "-"),
	}
	for in, want := range tests {
		got := SanitizeProjectID(in)
		if got != want {
			t.Errorf("SanitizeProjectID(%q) = %q, want %q", in, got, want)
		}
		if ValidateProjectID(got) != nil {
			t.Errorf("SanitizeProjectID(%q) = %q is not a valid project id", in, got)
		}
	}
}

func FuzzSanitizeProjectID(f *testing.F) {
	for _, s := range []string{"github.com/acme/app", "é/ü", strings.Repeat("日本", 50), "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeProjectID(s)
		if ValidateProjectID(got) != nil || !utf8.ValidString(got) {
			t.Fatalf("SanitizeProjectID(%q) = %q: invalid", s, got)
		}
		if SanitizeProjectID(got) != got {
			t.Fatalf("not idempotent: %q → %q", got, SanitizeProjectID(got))
		}
	})
}

func TestContentHashAndSimilarity(t *testing.T) {
	if ContentHash("How do I run tests?", "Use  go test ./...") != ContentHash("how do i run tests?", "use go test ./...") {
		t.Error("hash must ignore case and whitespace runs")
	}
	if ContentHash("a", "bc") == ContentHash("ab", "c") {
		t.Error("hash must separate question and answer")
	}
	if s := Similarity("run the race detector with go test -race", "run the race detector with go test -race ./..."); s < DuplicateThreshold {
		t.Errorf("near duplicate similarity = %.2f, want ≥ %.2f", s, DuplicateThreshold)
	}
	if s := Similarity("install docker on ubuntu", "configure nginx reverse proxy"); s > 0.3 {
		t.Errorf("unrelated similarity = %.2f, want low", s)
	}
}

func TestGradeTask(t *testing.T) {
	tests := []struct{ prompt, level string }{
		{"translate this to French: hello", "L0"},
		{"format this json", "L0"},
		{"explain what a goroutine is", "L1"},
		{"fix the failing test in parser_test.go", "L2"},
		{"why does this panic?\n```go\nvar m map[string]int\nm[\"a\"]=1\n```", "L2"},
		{"write a short story about a robot", "L3"},
		{"", "L1"},
	}
	for _, tt := range tests {
		if g := GradeTask(tt.prompt); g.TaskLevel != tt.level || g.Reason == "" {
			t.Errorf("GradeTask(%q) = %+v, want %s", tt.prompt, g, tt.level)
		}
	}
}

// TestWireGolden pins the JSON field names of records and matches: renaming a
// field silently breaks remote plugins and original clients.
func TestWireGolden(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := Record{QAID: "qa_1", ProjectID: "acme", Question: "q", Answer: "a", Tags: []string{"go"},
		Metadata: map[string]any{}, Status: StatusActive, Level: "L2", ValidationLevel: 2, TrustScore: 0.42,
		Alpha: 5, Beta: 3, UsageCount: 3, UseCount: 2, SuccessCount: 2, StrongSignalCount: 2,
		Stats: Counters{StrongPass: 2}, CreatedAt: ts, UpdatedAt: ts, LastValidatedAt: ts,
		ContentHash: "h", SharedProjects: []string{}}
	m := MatchFromRecord(rec, 0.8)
	m = Rank([]Match{m}, 0, 0, false)[0]
	for name, v := range map[string]any{"record": rec, "match": m} {
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".golden.json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if string(want) != string(got) {
			t.Errorf("%s JSON changed:\n%s\nwant:\n%s", name, got, want)
		}
	}
}

func ExampleBuildHitRequest() {
	req, ok := BuildHitRequest("acme", "run-1", "ev-1", []string{"qa_a", "qa_b"}, []string{"qa_b", "qa_invented"})
	fmt.Println(ok)
	for _, r := range req.References {
		fmt.Println(r.QAID, r.Shown, r.Used)
	}
	// Output:
	// true
	// qa_a true false
	// qa_b true true
}

func ExampleRank() {
	ms := []Match{
		{QAID: "fresh-candidate", Relevance: 0.9, Trust: 0.26, Freshness: 0},
		{QAID: "trusted", Relevance: 0.7, Trust: 0.8, Freshness: 0.9, ValidationLevel: 2},
	}
	for _, m := range Rank(ms, 0.2, 6, false) {
		fmt.Printf("%s %.3f\n", m.QAID, m.Score)
	}
	// Output:
	// trusted 0.800
	// fresh-candidate 0.573
}

func TestStatsBuilder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewStatsBuilder("p", now)
	b.Add(Record{QAID: "a", Status: StatusActive, Level: "L2", TrustScore: 0.8, UsageCount: 4, UseCount: 1, SuccessCount: 2})
	b.Add(Record{QAID: "b", Status: StatusStale, Level: "L1", TrustScore: 0.3, UsageCount: 0, FailureCount: 1, TTLExpireAt: now.Add(time.Hour)})
	b.Add(Record{QAID: "c", Status: StatusDeprecated, Level: "L0", TrustScore: 1.5})
	st := b.Stats(nil)
	if st.Total != 3 || st.Stale != 1 || st.ExpiringSoon != 1 || st.UseRate != 0.25 || st.Passes != 2 || st.Fails != 1 {
		t.Errorf("stats = %+v", st)
	}
	if len(st.Top) != 2 || st.Top[0].QAID != "a" || st.Worst[0].QAID != "b" {
		t.Errorf("top %v worst %v: want a first, b worst, deprecated left out", st.Top, st.Worst)
	}
	if st.TrustHistogram[9] != 1 || st.TrustHistogram[8] != 1 || st.TrustHistogram[3] != 1 || st.ValidationsByDay == nil {
		t.Errorf("histogram %v", st.TrustHistogram)
	}
	if st.Quarantined != 0 || st.AwaitingReview == nil || len(st.AwaitingReview) != 0 {
		t.Errorf("nothing quarantined: %d %v", st.Quarantined, st.AwaitingReview)
	}
}

func TestStatsBuilderListsQuarantinedQAsNewestFirst(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewStatsBuilder("p", now)
	for i := range StatsAwaiting + 5 {
		b.Add(Record{QAID: fmt.Sprintf("q%02d", i), Status: StatusCandidate, Quarantined: true, CreatedAt: now.Add(time.Duration(i) * time.Minute)})
	}
	b.Add(Record{QAID: "gone", Status: StatusDeprecated, Quarantined: true, CreatedAt: now.Add(time.Hour)})
	b.Add(Record{QAID: "plain", Status: StatusCandidate, CreatedAt: now.Add(time.Hour)})
	st := b.Stats(nil)
	if st.Quarantined != StatsAwaiting+5 || len(st.AwaitingReview) != StatsAwaiting {
		t.Fatalf("quarantined %d, listed %d", st.Quarantined, len(st.AwaitingReview))
	}
	if first := st.AwaitingReview[0].QAID; first != fmt.Sprintf("q%02d", StatsAwaiting+4) {
		t.Errorf("first listed %s, want the newest", first)
	}
}

func TestSpecifics(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"Use Go 1.21 with timeout 5.", []string{"1.21", "5"}},
		{"Run `make lint` then edit ./config/app.toml and pkg_name, fooBar, --force-all.", []string{"--force-all", "./config/app.toml", "fooBar", "lint", "make", "pkg_name"}},
		{"How do I do it? Like this: press the big red button twice.", []string{}},
		{"超时设置为5秒，重启 cl2 服务", []string{"5", "cl2"}},
	}
	for _, tc := range tests {
		if got := Specifics(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Specifics(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if SameSpecifics("timeout 5", "timeout 50") || !SameSpecifics("set timeout 5 now", "now set the timeout 5") {
		t.Errorf("SameSpecifics: timeout 5 vs 50 must differ, reworded text with the same number must match")
	}
}
