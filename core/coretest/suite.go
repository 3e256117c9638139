package coretest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
)

// NewFunc returns a new, empty plugin for one test; it registers its own
// cleanup with t.Cleanup.
type NewFunc func(t *testing.T) core.MemoryPlugin

// Projects the suite writes to.
const (
	projA = "proj-a"
	projB = "proj-b"
	projC = "proj-c"
)

// Run runs the conformance suite against the plugins newPlugin returns.
func Run(t *testing.T, newPlugin func(t *testing.T) core.MemoryPlugin) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newPlugin NewFunc)
	}{
		{"CandidateRoundTrip", testCandidateRoundTrip},
		{"SearchOrder", testSearchOrder},
		{"SearchQuestionOutranksAnswer", testSearchQuestionOutranksAnswer},
		{"SearchRepeatedTermWeighsMore", testSearchRepeatedTermWeighsMore},
		{"SearchFunctionWordsRerank", testSearchFunctionWordsRerank},
		{"SearchLimit", testSearchLimit},
		{"SearchMinScore", testSearchMinScore},
		{"SearchEmptyQuery", testSearchEmptyQuery},
		{"SearchProjectScoping", testSearchProjectScoping},
		{"Hits", testHits},
		{"HitsRepeated", testHitsRepeated},
		{"SharingFollowsRecord", testSharingFollowsRecord},
		{"ValidationCounters", testValidationCounters},
		{"ValidationTrust", testValidationTrust},
		{"ErrNotFound", testErrNotFound},
		{"ErrInvalid", testErrInvalid},
		{"Idempotency", testIdempotency},
		{"Dedup", testDedup},
		{"Concurrent", testConcurrent},
		{"Cancellation", testCancellation},
		{"TaskGrade", testTaskGrade},
		{"Getter", testGetter},
		{"Lister", testLister},
		{"Listing", testListing},
		{"Deleter", testDeleter},
		{"Patcher", testPatcher},
		{"Importer", testImporter},
		{"Expirer", testExpirer},
		{"Statser", testStatser},
		{"StatsAsWritten", testStatsAsWritten},
		{"StatsTopWorst", testStatsTopWorst},
		{"StatsAwaitingReview", testStatsAwaitingReview},
		{"StatsExpiringSoon", testStatsExpiringSoon},
		{"StatsAfterImport", testStatsAfterImport},
		{"Pinger", testPinger},
		{"CandidateBatcher", testCandidateBatcher},
		{"RunRecorder", testRunRecorder},
		{"Auditor", testAuditor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newPlugin) })
	}
}

// as returns a context carrying an independent evidence source id.
func as(t testing.TB, id string) context.Context {
	return core.WithPrincipal(t.Context(), core.Principal{ID: id})
}

func addQA(t testing.TB, p core.MemoryPlugin, req core.CandidateRequest) string {
	t.Helper()
	if req.ProjectID == "" {
		req.ProjectID = projA
	}
	res, err := p.RecordCandidate(as(t, "creator"), req)
	if err != nil {
		t.Fatalf("RecordCandidate: %v", err)
	}
	if res.QAID == "" {
		t.Fatalf("RecordCandidate returned no qa_id")
	}
	return res.QAID
}

func search(t testing.TB, p core.MemoryPlugin, project, query string, limit int) []core.Match {
	t.Helper()
	ms, err := p.Search(t.Context(), core.SearchRequest{ProjectID: project, Query: query, Limit: limit})
	if err != nil {
		t.Fatalf("Search(%q, %q): %v", project, query, err)
	}
	return ms
}

func ids(ms []core.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.QAID
	}
	return out
}

func findMatch(ms []core.Match, id string) (core.Match, bool) {
	i := slices.IndexFunc(ms, func(m core.Match) bool { return m.QAID == id })
	if i < 0 {
		return core.Match{}, false
	}
	return ms[i], true
}

func validate(t testing.TB, p core.MemoryPlugin, source, project, id, result, strength string) core.Record {
	t.Helper()
	r, err := p.RecordValidation(as(t, source), core.ValidateRequest{ProjectID: project, QAID: id, Result: result, SignalStrength: strength})
	if err != nil {
		t.Fatalf("RecordValidation(%s %s by %s): %v", result, strength, source, err)
	}
	return r
}

func getter(t *testing.T, p core.MemoryPlugin) core.Getter {
	t.Helper()
	g, ok := core.As[core.Getter](p)
	if !ok {
		t.Skip("plugin does not implement core.Getter")
	}
	return g
}

func get(t testing.TB, g core.Getter, project, id string) core.Record {
	t.Helper()
	r, err := g.Get(t.Context(), project, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", project, id, err)
	}
	return r
}

// trustOf reads a QA's current trust: Get when available, else search.
func trustOf(t testing.TB, p core.MemoryPlugin, project, id, query string) float64 {
	t.Helper()
	if g, ok := core.As[core.Getter](p); ok {
		return get(t, g, project, id).TrustScore
	}
	m, ok := findMatch(search(t, p, project, query, core.MaxSearchLimit), id)
	if !ok {
		t.Fatalf("qa %s not found by search %q", id, query)
	}
	return m.Trust
}

func testCandidateRoundTrip(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	conf := 0.8
	req := core.CandidateRequest{
		ProjectID:  projA,
		QAID:       "qa-roundtrip-1",
		Question:   "How do I fix the flaky zebrafish integration test?",
		Answer:     "Pin the zebrafish fixture seed and wait for the server readiness probe.",
		Summary:    "pin seed, wait for readiness",
		Tags:       []string{"testing", "flaky"},
		Metadata:   map[string]any{"lang": "go", "origin": "coretest"},
		Source:     "coretest",
		Author:     "alice",
		Confidence: &conf,
	}
	res, err := p.RecordCandidate(as(t, "creator"), req)
	if err != nil {
		t.Fatalf("RecordCandidate: %v", err)
	}
	if want := (core.CandidateResult{QAID: req.QAID, Status: core.StatusCandidate}); res != want {
		t.Errorf("RecordCandidate = %+v, want %+v", res, want)
	}
	ms := search(t, p, projA, "zebrafish flaky test", 0)
	m, ok := findMatch(ms, req.QAID)
	if !ok {
		t.Fatalf("search did not return the candidate; got %v", ids(ms))
	}
	got := struct {
		ProjectID, Question, Answer, Summary string
		Tags                                 []string
		Status                               core.Status
		Lang, Origin                         any
	}{m.ProjectID, m.Question, m.Answer, m.Summary, m.Tags, m.Status, m.Metadata["lang"], m.Metadata["origin"]}
	want := struct {
		ProjectID, Question, Answer, Summary string
		Tags                                 []string
		Status                               core.Status
		Lang, Origin                         any
	}{req.ProjectID, req.Question, req.Answer, req.Summary, req.Tags, core.StatusCandidate, "go", "coretest"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("match fields (-want +got):\n%s", diff)
	}
	if m.Relevance <= 0 || m.Relevance > 1 {
		t.Errorf("relevance = %v, want in (0,1]", m.Relevance)
	}
	if m.Level != core.LevelName(m.ValidationLevel) {
		t.Errorf("level %q does not match validation_level %d", m.Level, m.ValidationLevel)
	}

	// Assigned ids are non-empty and distinct.
	id1 := addQA(t, p, core.CandidateRequest{Question: "What port does the quokka daemon use?", Answer: "Port 7311 by default."})
	id2 := addQA(t, p, core.CandidateRequest{Question: "Where are quokka logs written?", Answer: "Under /var/log/quokka."})
	if id1 == id2 {
		t.Errorf("two candidates got the same id %q", id1)
	}
	if err := core.ValidateQAID(id1); err != nil {
		t.Errorf("assigned id %q is not a valid qa_id: %v", id1, err)
	}

	if g, ok := core.As[core.Getter](p); ok {
		r := get(t, g, projA, req.QAID)
		if r.CreatedAt.IsZero() || r.UpdatedAt.IsZero() {
			t.Errorf("created_at/updated_at not set: %v %v", r.CreatedAt, r.UpdatedAt)
		}
		if r.ContentHash != core.ContentHash(req.Question, req.Answer) {
			t.Errorf("content_hash = %q, want core.ContentHash of question and answer", r.ContentHash)
		}
		if r.Source != req.Source || r.Author != req.Author || r.Confidence != conf {
			t.Errorf("source/author/confidence = %q/%q/%v, want %q/%q/%v", r.Source, r.Author, r.Confidence, req.Source, req.Author, conf)
		}
		if r.Status != core.StatusCandidate || r.SuccessCount != 0 || r.UsageCount != 0 {
			t.Errorf("new record: status %s, success %d, usage %d; want candidate, 0, 0", r.Status, r.SuccessCount, r.UsageCount)
		}
	}
}

func testSearchOrder(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	for i := range 8 {
		addQA(t, p, core.CandidateRequest{
			Question: fmt.Sprintf("marmot cache eviction %s %s", Word(100+i), strings.Repeat(Word(200+i)+" ", i)),
			Answer:   fmt.Sprintf("%s about marmot caches %s", Word(300+i), strings.Repeat("marmot ", i%3)),
		})
	}
	id := addQA(t, p, core.CandidateRequest{Question: "marmot cache eviction policy", Answer: "LRU with marmot cache eviction windows"})
	validate(t, p, "agent-a", projA, id, "pass", "strong")
	validate(t, p, "agent-b", projA, id, "pass", "strong")
	ms := search(t, p, projA, "marmot cache eviction", core.MaxSearchLimit)
	if len(ms) < 9 {
		t.Fatalf("got %d matches, want 9", len(ms))
	}
	for i, m := range ms {
		want := core.RankScore(m.Relevance, m.Trust, m.Freshness, m.ValidationLevel, m.Status)
		if d := m.Score - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("match %d (%s): score %v, want core.RankScore %v", i, m.QAID, m.Score, want)
		}
		if i > 0 && ms[i-1].Score < m.Score {
			t.Errorf("match %d score %v > match %d score %v: not sorted by score", i, m.Score, i-1, ms[i-1].Score)
		}
	}
	reranked := core.Rank(slices.Clone(ms), 0, 0, false)
	if diff := cmp.Diff(ids(reranked), ids(ms)); diff != "" {
		t.Errorf("order differs from core.Rank (-rank +got):\n%s", diff)
	}
}

func testSearchQuestionOutranksAnswer(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	inQ := addQA(t, p, core.CandidateRequest{Question: "How to tune the okapi connection pool", Answer: "Raise max idle connections and set a lifetime."})
	inA := addQA(t, p, core.CandidateRequest{Question: "How to tune the database connection pool", Answer: "Raise max idle connections, as the okapi docs say."})
	ms := search(t, p, projA, "okapi", 0)
	mq, ok1 := findMatch(ms, inQ)
	ma, ok2 := findMatch(ms, inA)
	if !ok1 || !ok2 {
		t.Fatalf("want both QAs, got %v", ids(ms))
	}
	if mq.Relevance <= ma.Relevance || ms[0].QAID != inQ {
		t.Errorf("question match relevance %v (rank %d) should outrank answer-only match %v", mq.Relevance, slices.Index(ids(ms), inQ), ma.Relevance)
	}
}

// testSearchRepeatedTermWeighsMore: a word the query says twice weighs
// more than one it says once (retrieval's Params.K3), on every store.
func testSearchRepeatedTermWeighsMore(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	okapi := addQA(t, p, core.CandidateRequest{Question: "okapi driver crashes", Answer: "Upgrade the driver."})
	pool := addQA(t, p, core.CandidateRequest{Question: "connection pool exhausted", Answer: "Raise the limit."})
	for _, c := range []struct{ query, first, second string }{
		{"okapi okapi pool", okapi, pool},
		{"okapi pool pool", pool, okapi},
	} {
		ms := search(t, p, projA, c.query, 0)
		first, ok1 := findMatch(ms, c.first)
		second, ok2 := findMatch(ms, c.second)
		if !ok1 || !ok2 {
			t.Fatalf("%q: want both QAs, got %v", c.query, ids(ms))
		}
		if first.Relevance <= second.Relevance {
			t.Errorf("%q: relevance %v of the QA with the repeated word, want above %v", c.query, first.Relevance, second.Relevance)
		}
	}
}

// testSearchFunctionWordsRerank: two QAs whose questions have the same
// indexed terms ("exchange", "currency") differ in their function words;
// the one that asks as the query asks ("how do I") ranks first, with the
// higher relevance, although the other is newer (which wins a tie when the
// two were created in different milliseconds).
func testSearchFunctionWordsRerank(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	how := addQA(t, p, core.CandidateRequest{Question: "How do I exchange currency?", Answer: "In the app."})
	which := addQA(t, p, core.CandidateRequest{Question: "Which currency will you exchange?", Answer: "In the app."})
	ms := search(t, p, projA, "how do i exchange currency", 0)
	if len(ms) != 2 || ms[0].QAID != how {
		t.Fatalf("got %v, want %s (how do I …) then %s", ids(ms), how, which)
	}
	if ms[0].Relevance <= ms[1].Relevance {
		t.Errorf("relevance %v of the QA sharing the query's function words, want above %v", ms[0].Relevance, ms[1].Relevance)
	}
	// Without function words in the query, the two tie (which comes first
	// then is the tie rule's, by creation time, not this test's).
	ms = search(t, p, projA, "exchange currency", 0)
	if len(ms) != 2 || ms[0].Relevance != ms[1].Relevance {
		t.Errorf("no function words: got %v, want %s and %s at equal relevance", ms, which, how)
	}
}

func testSearchLimit(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	for i := range 9 {
		addQA(t, p, core.CandidateRequest{Question: fmt.Sprintf("wombat %s %s", Word(100+i), Word(200+i)), Answer: fmt.Sprintf("%s %s wombat", Word(300+i), Word(400+i))})
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"explicit", 2, 2},
		{"default", 0, core.DefaultSearchLimit},
		{"above count", 50, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(search(t, p, projA, "wombat", tc.limit)); got != tc.want {
				t.Errorf("limit %d: got %d matches, want %d", tc.limit, got, tc.want)
			}
		})
	}
}

func testSearchMinScore(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	addQA(t, p, core.CandidateRequest{Question: "ibex ferret gecko lemur tapir", Answer: "ibex ferret gecko lemur tapir all together"})
	addQA(t, p, core.CandidateRequest{Question: "ibex only here", Answer: "nothing else matches"})
	addQA(t, p, core.CandidateRequest{Question: "ibex and ferret", Answer: "two of the five"})
	all, err := p.Search(t.Context(), core.SearchRequest{ProjectID: projA, Query: "ibex ferret gecko lemur tapir", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("min_score 0: got %d matches, want 3", len(all))
	}
	lo, hi := 1.0, 0.0
	for _, m := range all {
		lo, hi = min(lo, m.Relevance), max(hi, m.Relevance)
	}
	if lo == hi {
		t.Fatalf("all relevances equal (%v): cannot test min_score", lo)
	}
	th := (lo + hi) / 2
	got, err := p.Search(t.Context(), core.SearchRequest{ProjectID: projA, Query: "ibex ferret gecko lemur tapir", Limit: 50, MinScore: th})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, m := range all {
		if m.Relevance >= th {
			want++
		}
	}
	if len(got) != want {
		t.Errorf("min_score %.3f: got %d matches, want %d", th, len(got), want)
	}
	for _, m := range got {
		if m.Relevance < th {
			t.Errorf("match %s relevance %v below min_score %v", m.QAID, m.Relevance, th)
		}
	}
}

func testSearchEmptyQuery(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	addQA(t, p, core.CandidateRequest{Question: "anything at all", Answer: "something"})
	for _, q := range []string{"", "   ", "\n\t"} {
		ms, err := p.Search(t.Context(), core.SearchRequest{ProjectID: projA, Query: q})
		if err != nil {
			t.Errorf("Search(%q): %v, want no error", q, err)
		}
		if len(ms) != 0 {
			t.Errorf("Search(%q) = %d matches, want none", q, len(ms))
		}
	}
}

func testSearchProjectScoping(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	own := addQA(t, p, core.CandidateRequest{ProjectID: projA, Question: "narwhal build cache own", Answer: "narwhal A"})
	glob := addQA(t, p, core.CandidateRequest{ProjectID: core.GlobalProject, Question: "narwhal build cache global", Answer: "narwhal G"})
	shared := addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "narwhal build cache shared", Answer: "narwhal B", SharedProjects: []string{projA}})
	other := addQA(t, p, core.CandidateRequest{ProjectID: projC, Question: "narwhal build cache other", Answer: "narwhal C"})
	for _, tc := range []struct {
		project string
		want    []string
	}{
		{projA, []string{own, glob, shared}},
		{projB, []string{glob, shared}},
		{projC, []string{glob, other}},
		{core.GlobalProject, []string{glob}},
		{"proj-empty", []string{glob}},
	} {
		t.Run(tc.project, func(t *testing.T) {
			got := ids(search(t, p, tc.project, "narwhal build cache", 50))
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("visible QAs (-want +got):\n%s", diff)
			}
		})
	}
}

func testHits(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	id := addQA(t, p, core.CandidateRequest{Question: "How to restart the axolotl worker", Answer: "systemctl restart axolotl"})
	other := addQA(t, p, core.CandidateRequest{ProjectID: projC, Question: "invisible to A", Answer: "yes"})
	before := trustOf(t, p, projA, id, "axolotl worker")
	start := time.Now()
	for i, refs := range [][]core.HitRef{
		{{QAID: id, Shown: true}},
		{{QAID: id, Shown: true, Used: true}},
		{{QAID: id, Shown: true, Used: true}, {QAID: "qa-does-not-exist", Shown: true, Used: true}},
		{{QAID: other, Shown: true, Used: true}},
	} {
		res, err := p.RecordHit(as(t, "agent-a"), core.HitRequest{ProjectID: projA, References: refs})
		if err != nil {
			t.Fatalf("RecordHit %d: %v", i, err)
		}
		want := 1
		if i == 3 {
			want = 0 // another project's QA is skipped
		}
		if res.Updated != want {
			t.Errorf("RecordHit %d: updated = %d, want %d", i, res.Updated, want)
		}
	}
	if after := trustOf(t, p, projA, id, "axolotl worker"); after != before {
		t.Errorf("trust changed by hits: %v → %v", before, after)
	}
	g, ok := core.As[core.Getter](p)
	if !ok {
		return
	}
	r := get(t, g, projA, id)
	if r.UsageCount != 3 || r.UseCount != 2 {
		t.Errorf("usage_count/use_count = %d/%d, want 3/2", r.UsageCount, r.UseCount)
	}
	if r.LastUsedAt.IsZero() || r.LastUsedAt.Before(start.Add(-time.Minute)) {
		t.Errorf("last_used_at = %v, want set by the used hit", r.LastUsedAt)
	}
	if r.SuccessCount != 0 || r.FailureCount != 0 {
		t.Errorf("hits changed validation counters: %d/%d", r.SuccessCount, r.FailureCount)
	}
	if o := get(t, g, projC, other); o.UsageCount != 0 {
		t.Errorf("hit from another project counted: usage_count %d", o.UsageCount)
	}
}

// testHitsRepeated: each reference counts once, so a QA referenced twice
// in one request counts twice (its counters and Updated) — its project's
// own QA, a global one and one shared with the project alike — and an
// unknown qa_id referenced twice counts nothing.
func testHitsRepeated(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	own := addQA(t, p, core.CandidateRequest{Question: "How to brush the capybara", Answer: "capybara brush --soft"})
	glob := addQA(t, p, core.CandidateRequest{ProjectID: core.GlobalProject, Question: "How to bathe the capybara", Answer: "capybara bathe --warm"})
	shared := addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "How to feed the capybara", Answer: "capybara feed --grass", SharedProjects: []string{projA}})
	var refs []core.HitRef
	for _, id := range []string{own, glob, shared, "qa-does-not-exist"} {
		refs = append(refs, core.HitRef{QAID: id, Shown: true})
	}
	for _, id := range []string{shared, glob, own, "qa-does-not-exist"} {
		refs = append(refs, core.HitRef{QAID: id, Shown: true, Used: true}, core.HitRef{QAID: id})
	}
	res, err := p.RecordHit(as(t, "agent-a"), core.HitRequest{ProjectID: projA, References: refs})
	if err != nil || res.Updated != 6 || len(res.NotCovered) != 0 {
		t.Fatalf("RecordHit = %+v, %v; want 6 references counted", res, err)
	}
	g, ok := core.As[core.Getter](p)
	if !ok {
		return
	}
	for id, owner := range map[string]string{own: projA, glob: core.GlobalProject, shared: projB} {
		if r := get(t, g, owner, id); r.UsageCount != 2 || r.UseCount != 1 {
			t.Errorf("%s QA referenced twice: usage_count/use_count = %d/%d, want 2/1", owner, r.UsageCount, r.UseCount)
		}
	}
}

// testSharingFollowsRecord: a QA is read from a project it is shared with
// only while its record names that project. Deleted and created again
// under its qa_id without the share, it is neither read, hit nor validated
// from there (a store's index of shared QAs may still name it).
func testSharingFollowsRecord(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	d, ok := core.As[core.Deleter](p)
	if !ok {
		t.Skip("plugin does not implement core.Deleter")
	}
	q, a := "How to groom the shared alpaca", "alpaca groom --gently"
	id := addQA(t, p, core.CandidateRequest{Question: q, Answer: a, SharedProjects: []string{projB}})
	hit := func() int {
		t.Helper()
		res, err := p.RecordHit(as(t, "agent-b"), core.HitRequest{ProjectID: projB, References: []core.HitRef{{QAID: id, Shown: true}}})
		if err != nil {
			t.Fatalf("RecordHit: %v", err)
		}
		return res.Updated
	}
	if n := hit(); n != 1 {
		t.Fatalf("hit from %s on a QA shared with it: updated %d, want 1", projB, n)
	}
	if err := d.Delete(t.Context(), projA, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if again := addQA(t, p, core.CandidateRequest{QAID: id, Question: q, Answer: a}); again != id {
		t.Fatalf("created again as %s, want %s", again, id)
	}
	if n := hit(); n != 0 {
		t.Errorf("hit from %s on a QA no longer shared with it: updated %d, want 0", projB, n)
	}
	_, err := p.RecordValidation(as(t, "agent-b"), core.ValidateRequest{ProjectID: projB, QAID: id, Result: "pass"})
	if !errors.Is(err, core.ErrNotFound) {
		t.Errorf("validation from %s on a QA no longer shared with it: %v, want ErrNotFound", projB, err)
	}
	if g, ok := core.As[core.Getter](p); ok {
		if _, err := g.Get(t.Context(), projB, id); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Get from %s of a QA no longer shared with it: %v, want ErrNotFound", projB, err)
		}
		if r := get(t, g, projA, id); r.UsageCount != 0 {
			t.Errorf("usage_count of the QA created again = %d, want 0", r.UsageCount)
		}
	}
}

func testValidationCounters(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	id := addQA(t, p, core.CandidateRequest{Question: "How to vendor the pangolin SDK", Answer: "go mod vendor, then patch pangolin"})
	yes, no := true, false
	// consecutive_fail ("fails since the last pass") is 0 after a pass, at
	// least 1 after a strong fail and never decreases over a run of fails;
	// how much one fail adds is the trust model's business. wantConsec 0
	// means "0", 1 means "≥ 1 and not below the previous value", -1 skips.
	steps := []struct {
		name       string
		source     string
		req        core.ValidateRequest
		wantStats  core.Counters
		wantSucc   int64
		wantFail   int64
		wantStrong int64
		wantConsec int
		wantActive bool
	}{
		{"strong pass", "agent-a", core.ValidateRequest{Result: "pass", SignalStrength: "strong"},
			core.Counters{StrongPass: 1}, 1, 0, 1, 0, true},
		{"strong fail", "agent-b", core.ValidateRequest{Result: "fail", SignalStrength: "strong"},
			core.Counters{StrongPass: 1, StrongFail: 1}, 1, 1, 2, 1, false},
		{"legacy strong fail", "agent-c", core.ValidateRequest{Success: &no, StrongSignal: true},
			core.Counters{StrongPass: 1, StrongFail: 2}, 1, 2, 3, 1, false},
		{"medium fail", "agent-d", core.ValidateRequest{Result: "fail", SignalStrength: "medium"},
			core.Counters{StrongPass: 1, StrongFail: 2, MediumFail: 1}, 1, 3, 3, -1, false},
		{"legacy strong pass", "agent-e", core.ValidateRequest{Success: &yes, StrongSignal: true},
			core.Counters{StrongPass: 2, StrongFail: 2, MediumFail: 1}, 2, 3, 4, 0, false},
		{"weak pass", "agent-f", core.ValidateRequest{Result: "success", SignalStrength: "weak"},
			core.Counters{StrongPass: 2, StrongFail: 2, MediumFail: 1, WeakPass: 1}, 3, 3, 4, 0, false},
		{"weak fail", "agent-g", core.ValidateRequest{Result: "failure"},
			core.Counters{StrongPass: 2, StrongFail: 2, MediumFail: 1, WeakPass: 1, WeakFail: 1}, 3, 4, 4, -1, false},
	}
	prevConsec := 0
	for _, s := range steps {
		req := s.req
		req.ProjectID, req.QAID = projA, id
		r, err := p.RecordValidation(as(t, s.source), req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.wantStats, r.Stats); diff != "" {
			t.Errorf("%s: stats (-want +got):\n%s", s.name, diff)
		}
		if r.SuccessCount != s.wantSucc || r.FailureCount != s.wantFail || r.StrongSignalCount != s.wantStrong {
			t.Errorf("%s: success/failure/strong = %d/%d/%d, want %d/%d/%d", s.name, r.SuccessCount, r.FailureCount, r.StrongSignalCount, s.wantSucc, s.wantFail, s.wantStrong)
		}
		switch {
		case s.wantConsec == 0 && r.ConsecutiveFail != 0:
			t.Errorf("%s: consecutive_fail = %d, want 0 after a pass", s.name, r.ConsecutiveFail)
		case s.wantConsec == 1 && (r.ConsecutiveFail < 1 || r.ConsecutiveFail < prevConsec):
			t.Errorf("%s: consecutive_fail = %d, want ≥ max(1, %d)", s.name, r.ConsecutiveFail, prevConsec)
		}
		prevConsec = r.ConsecutiveFail
		if s.wantActive && r.Status != core.StatusActive {
			t.Errorf("%s: status = %s, want active after a pass", s.name, r.Status)
		}
		if r.QAID != id || r.ProjectID != projA {
			t.Errorf("%s: returned record %s/%s, want %s/%s", s.name, r.ProjectID, r.QAID, projA, id)
		}
		if r.LastValidatedAt.IsZero() {
			t.Errorf("%s: last_validated_at not set", s.name)
		}
	}
}

func testValidationTrust(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	id := addQA(t, p, core.CandidateRequest{Question: "How to rotate the capybara signing key", Answer: "capybara keys rotate --all"})
	t0 := trustOf(t, p, projA, id, "capybara signing key")
	t1 := validate(t, p, "agent-a", projA, id, "pass", "strong").TrustScore
	t2 := validate(t, p, "agent-b", projA, id, "pass", "strong").TrustScore
	if !(t0 < t1 && t1 < t2) {
		t.Errorf("trust over independent passes = %v, %v, %v; want strictly increasing", t0, t1, t2)
	}
	t3 := validate(t, p, "agent-c", projA, id, "fail", "strong").TrustScore
	t4 := validate(t, p, "agent-d", projA, id, "fail", "strong").TrustScore
	if !(t3 < t2 && t4 < t3) {
		t.Errorf("trust over independent fails = %v → %v → %v; want strictly decreasing", t2, t3, t4)
	}
	for _, v := range []float64{t0, t1, t2, t3, t4} {
		if v < 0 || v > 1 {
			t.Errorf("trust %v outside [0,1]", v)
		}
	}
}

func testErrNotFound(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	other := addQA(t, p, core.CandidateRequest{ProjectID: projC, Question: "private to C", Answer: "C only"})
	for _, tc := range []struct {
		name, project, id string
	}{
		{"unknown qa", projA, "qa-unknown"},
		{"another project's qa", projA, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.RecordValidation(as(t, "agent-a"), core.ValidateRequest{ProjectID: tc.project, QAID: tc.id, Result: "pass"})
			if !errors.Is(err, core.ErrNotFound) {
				t.Errorf("RecordValidation: err = %v, want ErrNotFound", err)
			}
			if err != nil && strings.Contains(err.Error(), "private to C") {
				t.Errorf("error leaks record text: %v", err)
			}
		})
	}
}

func testErrInvalid(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	ctx := as(t, "agent-a")
	tests := []struct {
		name  string
		field string
		call  func() error
	}{
		{"search bad project", "project_id", func() error {
			_, err := p.Search(ctx, core.SearchRequest{ProjectID: "Bad Project!", Query: "x"})
			return err
		}},
		{"search limit", "limit", func() error {
			_, err := p.Search(ctx, core.SearchRequest{ProjectID: projA, Query: "x", Limit: 99})
			return err
		}},
		{"search min_score", "min_score", func() error {
			_, err := p.Search(ctx, core.SearchRequest{ProjectID: projA, Query: "x", MinScore: 2})
			return err
		}},
		{"candidate no question", "question", func() error {
			_, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Answer: "a"})
			return err
		}},
		{"candidate no answer", "answer", func() error {
			_, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: "q"})
			return err
		}},
		{"candidate bad qa_id", "qa_id", func() error {
			_, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: "q", Answer: "a", QAID: "bad id/with slash"})
			return err
		}},
		{"candidate bad evidence", "evidence.result", func() error {
			_, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: "q", Answer: "a", Evidence: &core.Evidence{Result: "maybe"}})
			return err
		}},
		{"validate no result", "result", func() error {
			_, err := p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: "qa-1"})
			return err
		}},
		{"validate bad strength", "signal_strength", func() error {
			_, err := p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: "qa-1", Result: "pass", SignalStrength: "huge"})
			return err
		}},
		{"validate bad qa_id", "qa_id", func() error {
			_, err := p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: "", Result: "pass"})
			return err
		}},
		{"hit bad ref", "references[1].qa_id", func() error {
			_, err := p.RecordHit(ctx, core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: "ok"}, {QAID: "bad id"}}})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var fe *core.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *core.FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q", fe.Field, tc.field)
			}
		})
	}
}

func testIdempotency(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	ctx := as(t, "agent-a")
	creq := core.CandidateRequest{ProjectID: projA, Question: "How to warm the jackal cache", Answer: "jackal warm --all", EventID: "ev-cand-1"}
	c1, err := p.RecordCandidate(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := p.RecordCandidate(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Errorf("repeated candidate event: %+v then %+v, want the same result", c1, c2)
	}
	if n := len(search(t, p, projA, "jackal cache", 50)); n != 1 {
		t.Errorf("repeated candidate event stored %d QAs, want 1", n)
	}

	// (Another source validates: the creator's own reports count only in
	// the single-user store.)
	vctx := as(t, "agent-b")
	vreq := core.ValidateRequest{ProjectID: projA, QAID: c1.QAID, Result: "pass", SignalStrength: "strong", EventID: "ev-val-1"}
	v1, err := p.RecordValidation(vctx, vreq)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := p.RecordValidation(vctx, vreq)
	if err != nil {
		t.Fatal(err)
	}
	if v2.SuccessCount != 1 || v2.StrongSignalCount != 1 {
		t.Errorf("repeated validation event counted twice: success %d strong %d", v2.SuccessCount, v2.StrongSignalCount)
	}
	if diff := cmp.Diff(v1, v2, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("repeated validation event returned another result (-first +second):\n%s", diff)
	}

	hreq := core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: c1.QAID, Shown: true, Used: true}}, EventID: "ev-hit-1"}
	h1, err := p.RecordHit(ctx, hreq)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := p.RecordHit(ctx, hreq)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(h1, h2) {
		t.Errorf("repeated hit event: %+v then %+v", h1, h2)
	}
	if g, ok := core.As[core.Getter](p); ok {
		r := get(t, g, projA, c1.QAID)
		if r.UsageCount != 1 || r.UseCount != 1 || r.SuccessCount != 1 {
			t.Errorf("after repeated events: usage %d use %d success %d, want 1 1 1", r.UsageCount, r.UseCount, r.SuccessCount)
		}
	}
}

func testDedup(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	q := "How do I stop the heron service from leaking file descriptors after a reload?"
	a := "Close the heron listener in the reload hook and set FD_CLOEXEC on every socket it opens, then restart once."
	first := addQA(t, p, core.CandidateRequest{Question: q, Answer: a})
	tests := []struct {
		name  string
		req   core.CandidateRequest
		dedup bool
	}{
		{"same text", core.CandidateRequest{Question: q, Answer: a}, true},
		{"case and spacing", core.CandidateRequest{Question: strings.ToUpper(q), Answer: "  " + strings.ReplaceAll(a, " ", "  ")}, true},
		{"near duplicate", core.CandidateRequest{Question: strings.Replace(q, "How do I", "How can I", 1), Answer: strings.Replace(a, "restart once", "restart it once", 1)}, true},
		{"with evidence", core.CandidateRequest{Question: q, Answer: a, Evidence: &core.Evidence{Result: core.ResultPass, Strength: core.StrengthStrong}}, true},
		{"different answer", core.CandidateRequest{Question: q, Answer: "Upgrade heron to 2.0, which fixed the descriptor leak."}, false},
		{"other project", core.CandidateRequest{ProjectID: projB, Question: q, Answer: a}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.ProjectID == "" {
				req.ProjectID = projA
			}
			res, err := p.RecordCandidate(as(t, "agent-x"), req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.dedup {
				if res.DeduplicatedInto != first || res.QAID != first {
					t.Errorf("result %+v, want deduplicated into %s", res, first)
				}
			} else if res.DeduplicatedInto != "" || res.QAID == first {
				t.Errorf("result %+v, want a new QA", res)
			}
		})
	}
	// (What a duplicate's evidence does depends on the store's flavour:
	// RunLedger's DuplicateEvidence.)
}

// testConcurrent: workers validate and hit one QA at once, then each
// records a candidate and searches; no update is lost. Eight workers of 20
// are enough: a Redis store without its locks and version checks keeps
// about a fifth of the validations here (the integration tier runs 64
// writers of 1,000 on each store).
func testConcurrent(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	id := addQA(t, p, core.CandidateRequest{Question: "How to page the on-call lynx", Answer: "lynx page --urgent"})
	const workers, perWorker = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			ctx := as(t, fmt.Sprintf("agent-%d", w))
			for i := range perWorker {
				var err error
				if i%2 == 0 {
					_, err = p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: id, Result: "pass", SignalStrength: "weak"})
				} else {
					_, err = p.RecordHit(ctx, core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true, Used: i%4 == 1}}})
				}
				if err != nil {
					errs <- err
					return
				}
			}
			if _, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: fmt.Sprintf("okra %s %s", Word(100+w), Word(200+w)), Answer: fmt.Sprintf("%s %s okra", Word(300+w), Word(400+w))}); err != nil {
				errs <- err
			}
			if _, err := p.Search(ctx, core.SearchRequest{ProjectID: projA, Query: "lynx"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent operation: %v", err)
	}
	r := validate(t, p, "final", projA, id, "pass", "weak")
	if want := int64(workers*perWorker/2 + 1); r.SuccessCount != want || r.Stats.WeakPass != want {
		t.Errorf("success_count = %d, weak_pass %d, want %d (lost updates)", r.SuccessCount, r.Stats.WeakPass, want)
	}
	if g, ok := core.As[core.Getter](p); ok {
		r := get(t, g, projA, id)
		if want := int64(workers * perWorker / 2); r.UsageCount != want {
			t.Errorf("usage_count = %d, want %d (lost updates)", r.UsageCount, want)
		}
		used := 0
		for i := 1; i < perWorker; i += 2 {
			if i%4 == 1 {
				used++
			}
		}
		if want := int64(workers * used); r.UseCount != want {
			t.Errorf("use_count = %d, want %d (lost updates)", r.UseCount, want)
		}
	}
	if n := len(search(t, p, projA, "okra", 50)); n != workers {
		t.Errorf("concurrent candidates: %d stored, want %d", n, workers)
	}
}

func testCancellation(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	id := addQA(t, p, core.CandidateRequest{Question: "cancel me", Answer: "please"})
	ctx, cancel := context.WithCancel(as(t, "agent-a"))
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"Search", func() error {
			_, err := p.Search(ctx, core.SearchRequest{ProjectID: projA, Query: "cancel"})
			return err
		}},
		{"RecordHit", func() error {
			_, err := p.RecordHit(ctx, core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true}}})
			return err
		}},
		{"RecordCandidate", func() error {
			_, err := p.RecordCandidate(ctx, core.CandidateRequest{ProjectID: projA, Question: "q2", Answer: "a2"})
			return err
		}},
		{"RecordValidation", func() error {
			_, err := p.RecordValidation(ctx, core.ValidateRequest{ProjectID: projA, QAID: id, Result: "pass"})
			return err
		}},
		{"TaskGrade", func() error {
			_, err := p.TaskGrade(ctx, core.TaskGradeRequest{Prompt: "fix the bug"})
			return err
		}},
	}
	if g, ok := core.As[core.Getter](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Get", func() error { _, err := g.Get(ctx, projA, id); return err }})
	}
	if l, ok := core.As[core.Lister](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"List", func() error { _, err := l.List(ctx, core.ListRequest{ProjectID: projA}); return err }})
	}
	if d, ok := core.As[core.Deleter](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Delete", func() error { return d.Delete(ctx, projA, id) }})
	}
	if pt, ok := core.As[core.Patcher](p); ok {
		st := core.StatusVerified
		calls = append(calls, struct {
			name string
			call func() error
		}{"Patch", func() error {
			_, err := pt.Patch(ctx, core.PatchRequest{ProjectID: projA, QAID: id, Status: &st})
			return err
		}})
	}
	if im, ok := core.As[core.Importer](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Import", func() error { return im.Import(ctx, Corpus(3, projA, 1)) }})
	}
	if ex, ok := core.As[core.Expirer](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Expire", func() error { _, err := ex.Expire(ctx, time.Now(), 10); return err }})
	}
	if s, ok := core.As[core.Statser](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Stats", func() error { _, err := s.Stats(ctx, projA); return err }})
	}
	if pg, ok := core.As[core.Pinger](p); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"Ping", func() error { return pg.Ping(ctx) }})
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := c.call()
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want one wrapping context.Canceled", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("returned after %v, want promptly", d)
			}
		})
	}
	// Nothing was written by the cancelled calls.
	if g, ok := core.As[core.Getter](p); ok {
		r := get(t, g, projA, id)
		if r.UsageCount != 0 || r.SuccessCount != 0 || r.Status != core.StatusCandidate {
			t.Errorf("cancelled writes were applied: usage %d success %d status %s", r.UsageCount, r.SuccessCount, r.Status)
		}
	}
}

func testTaskGrade(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	for _, tc := range []struct{ prompt, want string }{
		{"fix the panic in my parser function", "L2"},
		{"write a poem about autumn", "L3"},
		{"translate this to French", "L0"},
	} {
		g, err := p.TaskGrade(t.Context(), core.TaskGradeRequest{Prompt: tc.prompt})
		if err != nil {
			t.Fatalf("TaskGrade: %v", err)
		}
		if g.TaskLevel != tc.want {
			t.Errorf("TaskGrade(%q) = %s, want %s", tc.prompt, g.TaskLevel, tc.want)
		}
	}
}
