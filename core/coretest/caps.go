package coretest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
)

func testGetter(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	g := getter(t, p)
	own := addQA(t, p, core.CandidateRequest{Question: "own question", Answer: "own answer"})
	glob := addQA(t, p, core.CandidateRequest{ProjectID: core.GlobalProject, Question: "global question", Answer: "global answer"})
	other := addQA(t, p, core.CandidateRequest{ProjectID: projC, Question: "other question", Answer: "other answer"})
	for _, tc := range []struct {
		name, project, id string
		found             bool
	}{
		{"own", projA, own, true},
		{"global from any project", projA, glob, true},
		{"another project's", projA, other, false},
		{"unknown", projA, "qa-nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := g.Get(t.Context(), tc.project, tc.id)
			switch {
			case tc.found && err != nil:
				t.Fatalf("Get: %v", err)
			case tc.found && r.QAID != tc.id:
				t.Errorf("Get returned %s, want %s", r.QAID, tc.id)
			case !tc.found && !errors.Is(err, core.ErrNotFound):
				t.Errorf("Get: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func testLister(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	l, ok := core.As[core.Lister](p)
	if !ok {
		t.Skip("plugin does not implement core.Lister")
	}
	var want []string
	for i := range 7 {
		want = append(want, addQA(t, p, core.CandidateRequest{Question: fmt.Sprintf("lister question %d about tapirs", i), Answer: fmt.Sprintf("answer %d", i)}))
		time.Sleep(2 * time.Millisecond) // distinct created_at
	}
	addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "not listed in A", Answer: "b"})
	slices.Reverse(want) // newest first

	var got []string
	var pages []int
	req := core.ListRequest{ProjectID: projA, Limit: 3}
	for range 10 {
		page, err := l.List(t.Context(), req)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		pages = append(pages, len(page.Items))
		for _, r := range page.Items {
			got = append(got, r.QAID)
		}
		if page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed ids, newest first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3, 3, 1}, pages); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}

	validate(t, p, "agent-a", projA, want[2], "pass", "strong")
	for _, tc := range []struct {
		name string
		req  core.ListRequest
		want []string
	}{
		{"status active", core.ListRequest{ProjectID: projA, Status: core.StatusActive}, []string{want[2]}},
		{"q substring", core.ListRequest{ProjectID: projA, Q: "QUESTION 4 ABOUT"}, []string{want[2]}},
		{"q no match", core.ListRequest{ProjectID: projA, Q: "zzz-nothing"}, nil},
		{"other project", core.ListRequest{ProjectID: projB, Status: core.StatusActive}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := l.List(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			var got []string
			for _, r := range page.Items {
				got = append(got, r.QAID)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if page.NextCursor != "" {
				t.Errorf("next_cursor %q on the only page", page.NextCursor)
			}
		})
	}
}

func testDeleter(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	d, ok := core.As[core.Deleter](p)
	if !ok {
		t.Skip("plugin does not implement core.Deleter")
	}
	q, a := "How to clean the quetzal build cache", "quetzal clean --cache"
	id := addQA(t, p, core.CandidateRequest{Question: q, Answer: a})
	keep := addQA(t, p, core.CandidateRequest{Question: "quetzal release steps", Answer: "tag and push"})
	if err := d.Delete(t.Context(), projB, id); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Delete from another project: err = %v, want ErrNotFound", err)
	}
	if err := d.Delete(t.Context(), projA, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := ids(search(t, p, projA, "quetzal cache", 50)); !slices.Equal(got, []string{keep}) {
		t.Errorf("search after delete = %v, want only %s", got, keep)
	}
	if err := d.Delete(t.Context(), projA, id); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	if g, ok := core.As[core.Getter](p); ok {
		if _, err := g.Get(t.Context(), projA, id); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Get after delete: err = %v, want ErrNotFound", err)
		}
	}
	res, err := p.RecordCandidate(as(t, "creator"), core.CandidateRequest{ProjectID: projA, Question: q, Answer: a})
	if err != nil {
		t.Fatal(err)
	}
	if res.DeduplicatedInto != "" || res.QAID == id {
		t.Errorf("re-adding deleted content: %+v, want a new QA (hash index cleared)", res)
	}
}

func testPatcher(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	pt, ok := core.As[core.Patcher](p)
	if !ok {
		t.Skip("plugin does not implement core.Patcher")
	}
	id := addQA(t, p, core.CandidateRequest{Question: "How to seed the dingo database", Answer: "run dingo seed with fixtures"})
	verified := core.StatusVerified
	r, err := pt.Patch(t.Context(), core.PatchRequest{ProjectID: projA, QAID: id, Status: &verified})
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	if r.Status != core.StatusVerified {
		t.Fatalf("status after patch = %s, want verified", r.Status)
	}
	for i := range 4 {
		r = validate(t, p, fmt.Sprintf("agent-%d", i), projA, id, "fail", "strong")
	}
	if r.Status != core.StatusVerified {
		t.Errorf("human verdict not sticky: status %s after fails", r.Status)
	}

	newAnswer := "use the gharial loader instead"
	if _, err := pt.Patch(t.Context(), core.PatchRequest{ProjectID: projA, QAID: id, Answer: &newAnswer}); err != nil {
		t.Fatalf("Patch answer: %v", err)
	}
	if _, ok := findMatch(search(t, p, projA, "gharial", 50), id); !ok {
		t.Errorf("edited answer not re-indexed")
	}
	if ms := search(t, p, projA, "fixtures", 50); len(ms) != 0 {
		t.Errorf("old answer still indexed: %v", ids(ms))
	}

	deprecated := core.StatusDeprecated
	if _, err := pt.Patch(t.Context(), core.PatchRequest{ProjectID: projA, QAID: id, Status: &deprecated}); err != nil {
		t.Fatalf("Patch deprecated: %v", err)
	}
	if ms := search(t, p, projA, "dingo gharial", 50); len(ms) != 0 {
		t.Errorf("deprecated QA returned by search: %v", ids(ms))
	}
	if _, err := pt.Patch(t.Context(), core.PatchRequest{ProjectID: projB, QAID: id, Status: &verified}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Patch from another project: err = %v, want ErrNotFound", err)
	}
}

func testImporter(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	im, ok := core.As[core.Importer](p)
	if !ok {
		t.Skip("plugin does not implement core.Importer")
	}
	created := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := core.Record{
		QAID:              "imported-1",
		ProjectID:         projA,
		Question:          "How to calibrate the kinkajou sensor",
		Answer:            "kinkajou calibrate --zero",
		Summary:           "zero it",
		Tags:              []string{"hw"},
		Metadata:          map[string]any{"k": "v"},
		Source:            "import",
		Author:            "bob",
		Status:            core.StatusActive,
		ValidationLevel:   1,
		Level:             "L1",
		UsageCount:        7,
		UseCount:          4,
		SuccessCount:      3,
		FailureCount:      1,
		StrongSignalCount: 2,
		Stats:             core.Counters{StrongPass: 2, WeakPass: 1, WeakFail: 1},
		LastUsedAt:        created.Add(48 * time.Hour),
		LastValidatedAt:   created.Add(24 * time.Hour),
		CreatedAt:         created,
		UpdatedAt:         created.Add(48 * time.Hour),
		ContentHash:       core.ContentHash("How to calibrate the kinkajou sensor", "kinkajou calibrate --zero"),
		SharedProjects:    []string{},
	}
	if err := im.Import(t.Context(), append([]core.Record{rec}, Corpus(20, projA, 7)...)); err != nil {
		t.Fatalf("Import: %v", err)
	}
	m, ok := findMatch(search(t, p, projA, "kinkajou sensor", 10), rec.QAID)
	if !ok {
		t.Fatalf("imported record not searchable")
	}
	if m.Status != core.StatusActive {
		t.Errorf("imported status = %s, want active", m.Status)
	}
	if g, ok := core.As[core.Getter](p); ok {
		got := get(t, g, projA, rec.QAID)
		type kept struct {
			QAID, Question, Answer, Summary, Source, Author, ContentHash string
			Tags                                                         []string
			Status                                                       core.Status
			UsageCount, UseCount, SuccessCount, FailureCount, Strong     int64
			Stats                                                        core.Counters
			Created, Updated, LastUsed, LastValidated                    time.Time
		}
		view := func(r core.Record) kept {
			return kept{r.QAID, r.Question, r.Answer, r.Summary, r.Source, r.Author, r.ContentHash, r.Tags, r.Status,
				r.UsageCount, r.UseCount, r.SuccessCount, r.FailureCount, r.StrongSignalCount, r.Stats,
				r.CreatedAt.UTC(), r.UpdatedAt.UTC(), r.LastUsedAt.UTC(), r.LastValidatedAt.UTC()}
		}
		if diff := cmp.Diff(view(rec), view(got)); diff != "" {
			t.Errorf("imported record (-want +got):\n%s", diff)
		}
	}
	// Re-import replaces the record with the same id.
	rec.Answer = "kinkajou recalibrate with the wallaby tool"
	rec.ContentHash = core.ContentHash(rec.Question, rec.Answer)
	if err := im.Import(t.Context(), []core.Record{rec}); err != nil {
		t.Fatalf("re-Import: %v", err)
	}
	if _, ok := findMatch(search(t, p, projA, "wallaby", 10), rec.QAID); !ok {
		t.Errorf("re-imported record not re-indexed")
	}
	if ms := search(t, p, projA, "zero", 10); len(ms) != 0 {
		t.Errorf("old text of a replaced record still indexed: %v", ids(ms))
	}
	if n := len(search(t, p, projA, "kinkajou", 50)); n != 1 {
		t.Errorf("re-import: %d records match, want 1", n)
	}
	if err := im.Import(t.Context(), []core.Record{{QAID: "x", ProjectID: "Bad!"}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Import of an invalid record: err = %v, want ErrInvalid", err)
	}
}

func testExpirer(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	ex, ok := core.As[core.Expirer](p)
	if !ok {
		t.Skip("plugin does not implement core.Expirer")
	}
	stale := addQA(t, p, core.CandidateRequest{Question: "How to feed the okapi never validated", Answer: "okapi food"})
	stale2 := addQA(t, p, core.CandidateRequest{Question: "How to bathe the okapi never validated", Answer: "okapi soap"})
	kept := addQA(t, p, core.CandidateRequest{Question: "How to groom the okapi validated", Answer: "okapi brush"})
	validate(t, p, "agent-a", projA, kept, "pass", "strong")
	if n, err := ex.Expire(t.Context(), time.Now(), 0); err != nil || n != 0 {
		t.Errorf("Expire(now) = %d, %v; want 0 (nothing past its TTL)", n, err)
	}
	later := time.Now().Add(365 * 24 * time.Hour)
	for _, batch := range []int{1, 0} { // at most batch, then the rest
		if n, err := ex.Expire(t.Context(), later, batch); err != nil || n != 1 {
			t.Fatalf("Expire(now+1y, batch %d) = %d, %v; want 1", batch, n, err)
		}
	}
	got := ids(search(t, p, projA, "okapi", 50))
	if slices.Contains(got, stale) || slices.Contains(got, stale2) || !slices.Contains(got, kept) {
		t.Errorf("after expiry search = %v, want %s and %s gone and %s kept", got, stale, stale2, kept)
	}
}

func testStatser(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	s, ok := core.As[core.Statser](p)
	if !ok {
		t.Skip("plugin does not implement core.Statser")
	}
	a := addQA(t, p, core.CandidateRequest{Question: "stats one", Answer: "first"})
	addQA(t, p, core.CandidateRequest{Question: "stats two", Answer: "second"})
	addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "stats other", Answer: "third"})
	validate(t, p, "agent-a", projA, a, "pass", "strong")
	validate(t, p, "agent-b", projA, a, "fail", "weak")
	if _, err := p.RecordHit(t.Context(), core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: a, Shown: true, Used: true}}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(t.Context(), projA)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.ProjectID != projA || st.Total != 2 || st.Passes != 1 || st.Fails != 1 || st.Shown != 1 || st.Used != 1 {
		t.Errorf("stats = project %s total %d passes %d fails %d shown %d used %d; want %s 2 1 1 1 1",
			st.ProjectID, st.Total, st.Passes, st.Fails, st.Shown, st.Used, projA)
	}
	if st.ByStatus[core.StatusActive] != 1 || st.ByStatus[core.StatusCandidate] != 1 {
		t.Errorf("by_status = %v, want 1 active, 1 candidate", st.ByStatus)
	}
	sum := 0
	for _, n := range st.TrustHistogram {
		sum += n
	}
	if len(st.TrustHistogram) != 10 || sum != 2 {
		t.Errorf("trust_histogram = %v, want 10 buckets summing to 2", st.TrustHistogram)
	}
}

// testStatsAsWritten: the statistics show each QA as of its last write. A
// later write that moves a source's reputation (s fails a QA that three
// others pass) changes what Get computes for a QA s vouched for, not the
// trust Stats reports for it until that QA is written again.
func testStatsAsWritten(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	s, ok := core.As[core.Statser](p)
	if !ok {
		t.Skip("plugin does not implement core.Statser")
	}
	g := getter(t, p)
	a := addQA(t, p, core.CandidateRequest{Question: "as written vouched", Answer: "first"})
	b := addQA(t, p, core.CandidateRequest{Question: "as written consensus", Answer: "second"})
	written := validate(t, p, "agent-s", projA, a, "pass", "strong")
	for _, src := range []string{"agent-x", "agent-y", "agent-z"} {
		validate(t, p, src, projA, b, "pass", "strong")
	}
	validate(t, p, "agent-s", projA, b, "fail", "strong")
	now, err := g.Get(t.Context(), projA, a)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(now.TrustScore-written.TrustScore) < 1e-6 {
		t.Fatalf("the reputation change did not move %s's trust (%v): the case tests nothing", a, now.TrustScore)
	}
	st, err := s.Stats(t.Context(), projA)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st.Top, func(r core.Record) bool { return r.QAID == a })
	if i < 0 {
		t.Fatalf("%s is not among the top QAs of Stats", a)
	}
	if got := st.Top[i].TrustScore; math.Abs(got-written.TrustScore) > 1e-9 {
		t.Errorf("Stats shows %s with trust %v, want %v as of its last write (Get computes %v now)", a, got, written.TrustScore, now.TrustScore)
	}
}

func testPinger(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	pg, ok := core.As[core.Pinger](p)
	if !ok {
		t.Skip("plugin does not implement core.Pinger")
	}
	if err := pg.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func testCandidateBatcher(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	b, ok := core.As[core.CandidateBatcher](p)
	if !ok {
		t.Skip("plugin does not implement core.CandidateBatcher")
	}
	reqs := []core.CandidateRequest{
		{ProjectID: projA, Question: "How do I rotate the zebra logs?", Answer: "Run logrotate with the zebra profile.", EventID: "batch-1"},
		{ProjectID: projA, Question: "How do I warm the quokka cache?", Answer: "Call the warm endpoint before traffic.", EventID: "batch-2"},
		{ProjectID: projA, Question: "How do I rotate the zebra logs?", Answer: "Run logrotate with the zebra profile.", EventID: "batch-3"},
	}
	res, err := b.RecordCandidates(t.Context(), reqs)
	if err != nil {
		t.Fatalf("RecordCandidates: %v", err)
	}
	if len(res) != 3 || res[0].QAID == "" || res[1].QAID == "" || res[0].QAID == res[1].QAID {
		t.Fatalf("results = %+v, want two distinct new QAs first", res)
	}
	if res[2].DeduplicatedInto != res[0].QAID {
		t.Errorf("third request dedup = %+v, want into %s (same batch)", res[2], res[0].QAID)
	}
	ms, err := p.Search(t.Context(), core.SearchRequest{ProjectID: projA, Query: "quokka cache warm", Limit: 5})
	if err != nil || len(ms) == 0 || ms[0].QAID != res[1].QAID {
		t.Errorf("search after the batch = %v, %v; want %s first", ms, err, res[1].QAID)
	}
	// A bad request fails the whole batch, naming it; nothing is stored.
	_, err = b.RecordCandidates(t.Context(), []core.CandidateRequest{
		{ProjectID: projA, Question: "How do I feed the axolotl?", Answer: "Twice a day."},
		{ProjectID: projA, Question: "", Answer: "no question"},
	})
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("batch with an invalid request: err = %v, want ErrInvalid", err)
	}
	if ms, _ := p.Search(t.Context(), core.SearchRequest{ProjectID: projA, Query: "axolotl", Limit: 5}); len(ms) != 0 {
		t.Errorf("a failed batch stored %d QAs", len(ms))
	}
}

func testRunRecorder(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	rr, ok := core.As[core.RunRecorder](p)
	if !ok {
		t.Skip("plugin does not implement core.RunRecorder")
	}
	g := getter(t, p)
	id := addQA(t, p, core.CandidateRequest{Question: "How do I rebuild the walrus index?", Answer: "Run walrus reindex --all."})
	report := core.RunReport{
		Hit:         &core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true, Used: true}}, RunID: "run-r1", EventID: "rr-hit"},
		Validations: []core.ValidateRequest{{ProjectID: projA, QAID: id, Result: "pass", SignalStrength: "strong", RunID: "run-r1", EventID: "rr-val"}},
		Candidate: &core.CandidateRequest{ProjectID: projA, Question: "How do I compact the walrus journal?", Answer: "Stop writers, then walrus compact.",
			RunID: "run-r1", EventID: "rr-cand", Evidence: &core.Evidence{Result: core.ResultPass, Strength: core.StrengthStrong}},
	}
	ctx := as(t, "agent-run")
	out, err := rr.RecordRun(ctx, report)
	if err != nil {
		t.Fatalf("RecordRun: %v", err)
	}
	if out.Hit == nil || out.Hit.Updated != 1 || len(out.Records) != 1 || out.Candidate == nil || out.Candidate.QAID == "" {
		t.Fatalf("RecordRun = %+v, want a hit, one record and a candidate", out)
	}
	// Repeating the report (a retried write) changes nothing.
	if _, err := rr.RecordRun(ctx, report); err != nil {
		t.Fatalf("repeat: %v", err)
	}
	r := get(t, g, projA, id)
	if r.UsageCount != 1 || r.UseCount != 1 || r.SuccessCount != 1 || r.StrongSignalCount != 1 {
		t.Errorf("counters after a run reported twice: usage %d use %d success %d strong %d, want 1 each",
			r.UsageCount, r.UseCount, r.SuccessCount, r.StrongSignalCount)
	}
	// All or nothing: a report with an invalid part stores none of it.
	bad := core.RunReport{
		Hit:         &core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true}}, EventID: "rr-hit-2"},
		Validations: []core.ValidateRequest{{ProjectID: projA, QAID: id, Result: "maybe", EventID: "rr-val-2"}},
	}
	if _, err := rr.RecordRun(ctx, bad); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("invalid report: err = %v, want ErrInvalid", err)
	}
	missing := core.RunReport{
		Hit:         &core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: id, Shown: true}}, EventID: "rr-hit-3"},
		Validations: []core.ValidateRequest{{ProjectID: projA, QAID: "qa-missing", Result: "pass", EventID: "rr-val-3"}},
	}
	if _, err := rr.RecordRun(ctx, missing); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("report validating a missing QA: err = %v, want ErrNotFound", err)
	}
	if r := get(t, g, projA, id); r.UsageCount != 1 {
		t.Errorf("a failed report changed usage_count to %d", r.UsageCount)
	}
}
