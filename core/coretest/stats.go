package coretest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// The cases below pin what ProjectStats shows on every store, whichever
// way the store keeps it: which QAs the lists pick from, how many, in
// which order (ties included, cut inside a group of equal keys), who
// counts as quarantined, and which expiries are soon. Their expectations
// are written out here, not computed with core's own functions, so a
// change to one of those fails them.

// statsOf reads p's statistics of project, skipping a store without them.
func statsOf(t *testing.T, p core.MemoryPlugin, project string) core.ProjectStats {
	t.Helper()
	s, ok := core.As[core.Statser](p)
	if !ok {
		t.Skip("plugin does not implement core.Statser")
	}
	st, err := s.Stats(t.Context(), project)
	if err != nil {
		t.Fatalf("Stats(%s): %v", project, err)
	}
	return st
}

// importAsRead imports recs, then again each as Get reads it (a full
// export): the records as written then carry the trust, level, status and
// expiry the store computes, however it keeps them. Trust is rounded to
// 1e-6, so QAs of equal evidence read moments apart tie exactly.
func importAsRead(t *testing.T, p core.MemoryPlugin, recs []core.Record) {
	t.Helper()
	im, ok := core.As[core.Importer](p)
	if !ok {
		t.Skip("plugin does not implement core.Importer")
	}
	if err := im.Import(t.Context(), recs); err != nil {
		t.Fatalf("Import: %v", err)
	}
	g := getter(t, p)
	read := make([]core.Record, len(recs))
	for i, r := range recs {
		read[i] = get(t, g, r.ProjectID, r.QAID)
		read[i].TrustScore = math.Round(read[i].TrustScore*1e6) / 1e6
	}
	if err := im.Import(t.Context(), read); err != nil {
		t.Fatalf("Import as read: %v", err)
	}
}

func qaIDs(rs []core.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.QAID
	}
	return out
}

// testStatsTopWorst: Top lists the 5 live QAs of highest trust, qa_ids
// ascending among equal trust; Worst the 5 of lowest trust, qa_ids
// descending among equal trust; a deprecated QA is in neither, however
// trusted, and a deprecated quarantined one is not counted as
// quarantined. Seven QAs share one trust, so both lists end inside them.
func testStatsTopWorst(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	now := time.Now().UTC().Truncate(time.Second)
	rec := func(id string, st core.Status, level int, pass, fail int64) core.Record {
		return core.Record{QAID: id, ProjectID: projA, Question: "stats order " + id, Answer: "answer " + id, Status: st,
			ValidationLevel: level, SuccessCount: pass, FailureCount: fail, CreatedAt: now, UpdatedAt: now}
	}
	recs := []core.Record{
		rec("st-hi-a", core.StatusActive, 3, 6, 0), rec("st-hi-b", core.StatusActive, 3, 6, 0),
		rec("st-lo-a", core.StatusActive, 1, 0, 6), rec("st-lo-b", core.StatusActive, 1, 0, 6),
	}
	for _, x := range "gfedcba" {
		recs = append(recs, rec("st-mid-"+string(x), core.StatusActive, 1, 1, 0))
	}
	dep := rec("st-dep", core.StatusDeprecated, 3, 9, 0)
	dep.Quarantined = true
	importAsRead(t, p, append(recs, dep))
	g := getter(t, p)
	hi, mid, lo := get(t, g, projA, "st-hi-a"), get(t, g, projA, "st-mid-a"), get(t, g, projA, "st-lo-a")
	if !(hi.TrustScore > mid.TrustScore && mid.TrustScore > lo.TrustScore) {
		t.Fatalf("trust hi %v, mid %v, lo %v: want three levels, the case tests nothing", hi.TrustScore, mid.TrustScore, lo.TrustScore)
	}
	if d := get(t, g, projA, "st-dep"); d.Status != core.StatusDeprecated || d.TrustScore <= mid.TrustScore {
		t.Fatalf("st-dep is %s with trust %v: want deprecated above %v, the case tests nothing", d.Status, d.TrustScore, mid.TrustScore)
	}
	st := statsOf(t, p, projA)
	if want := []string{"st-hi-a", "st-hi-b", "st-mid-a", "st-mid-b", "st-mid-c"}; !slices.Equal(qaIDs(st.Top), want) {
		t.Errorf("top = %v, want %v (trust descending, qa_id ascending, no deprecated QA)", qaIDs(st.Top), want)
	}
	if want := []string{"st-lo-b", "st-lo-a", "st-mid-g", "st-mid-f", "st-mid-e"}; !slices.Equal(qaIDs(st.Worst), want) {
		t.Errorf("worst = %v, want %v (trust ascending, qa_id descending, no deprecated QA)", qaIDs(st.Worst), want)
	}
	if st.Total != 12 || st.Quarantined != 0 || len(st.AwaitingReview) != 0 {
		t.Errorf("total %d quarantined %d awaiting %v, want 12, 0 and none (a deprecated QA awaits no review)",
			st.Total, st.Quarantined, qaIDs(st.AwaitingReview))
	}
}

// testStatsAwaitingReview: AwaitingReview lists the 20 newest live
// quarantined QAs, qa_ids ascending among equal created_at, and
// Quarantined counts them all; a deprecated or unquarantined QA is
// neither. Two QAs share the created_at at which the list ends.
func testStatsAwaitingReview(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	now := time.Now().UTC().Truncate(time.Second)
	var recs []core.Record
	rec := func(id string, st core.Status, quarantined bool, created time.Time) core.Record {
		return core.Record{QAID: id, ProjectID: projB, Question: "stats awaiting " + id, Answer: "answer " + id, Status: st,
			Quarantined: quarantined, CreatedAt: created, UpdatedAt: created}
	}
	// st-q-00 alone, then pairs sharing a minute: (01, 02), …, (19, 20), then st-q-21.
	for i := range 22 {
		recs = append(recs, rec(fmt.Sprintf("st-q-%02d", i), core.StatusCandidate, true, now.Add(-time.Duration((i+1)/2)*time.Minute)))
	}
	recs = append(recs, rec("st-q-dep", core.StatusDeprecated, true, now.Add(time.Minute)),
		rec("st-plain", core.StatusCandidate, false, now.Add(time.Minute)))
	importAsRead(t, p, recs)
	st := statsOf(t, p, projB)
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("st-q-%02d", i))
	}
	if got := qaIDs(st.AwaitingReview); !slices.Equal(got, want) {
		t.Errorf("awaiting review = %v, want %v (newest first, qa_id ascending, live quarantined QAs only)", got, want)
	}
	if st.Quarantined != 22 {
		t.Errorf("quarantined = %d, want 22 (the live quarantined QAs)", st.Quarantined)
	}
}

// testStatsExpiringSoon: ExpiringSoon counts the QAs whose expiry is at
// most 7 days ahead, those past it the expiry job has not applied yet
// included; a QA expiring later, or never, is not counted.
func testStatsExpiringSoon(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	var recs []core.Record
	for i, age := range []time.Duration{20 * day, 25 * day, 40 * day, 0} {
		created := now.Add(-age)
		recs = append(recs, core.Record{QAID: fmt.Sprintf("st-exp-%d", i), ProjectID: projC, Question: fmt.Sprintf("stats expiry %d", i),
			Answer: "answer", Status: core.StatusCandidate, CreatedAt: created, UpdatedAt: created})
	}
	recs = append(recs, core.Record{QAID: "st-exp-kept", ProjectID: projC, Question: "stats expiry validated", Answer: "answer",
		Status: core.StatusActive, ValidationLevel: 2, SuccessCount: 3, CreatedAt: now.Add(-40 * day), UpdatedAt: now})
	importAsRead(t, p, recs)
	g := getter(t, p)
	var soon []string
	for _, r := range recs {
		got := get(t, g, projC, r.QAID)
		if !got.TTLExpireAt.IsZero() && got.TTLExpireAt.Sub(now) <= 7*day {
			soon = append(soon, r.QAID)
		}
	}
	if !slices.Equal(soon, []string{"st-exp-1", "st-exp-2"}) {
		t.Fatalf("expiries %v within 7 days: want st-exp-1 (in 5 days) and st-exp-2 (past), the case tests nothing", soon)
	}
	if st := statsOf(t, p, projC); st.ExpiringSoon != 2 {
		t.Errorf("expiring soon = %d, want 2 (%s)", st.ExpiringSoon, strings.Join(soon, ", "))
	}
}

// testStatsAfterImport: an imported record's share of the statistics is
// the record as the store computes it from its evidence, on every store:
// a line claiming trust 0.99 and level 3 without the evidence for them
// counts at the level and trust Get shows, not at the ones it claimed.
func testStatsAfterImport(t *testing.T, newPlugin NewFunc) {
	p := newPlugin(t)
	im, ok := core.As[core.Importer](p)
	if !ok {
		t.Skip("plugin does not implement core.Importer")
	}
	now := time.Now().UTC().Truncate(time.Second)
	claimed := core.Record{QAID: "st-imp", ProjectID: projA, Question: "How do I reindex the quokka store?",
		Answer: "quokka reindex --all", Status: core.StatusActive, ValidationLevel: 3, TrustScore: 0.99,
		CreatedAt: now, UpdatedAt: now}
	if err := im.Import(t.Context(), []core.Record{claimed}); err != nil {
		t.Fatalf("Import: %v", err)
	}
	read := get(t, getter(t, p), projA, "st-imp")
	s := statsOf(t, p, projA)
	if len(s.Top) != 1 || s.Top[0].QAID != "st-imp" {
		t.Fatalf("Top %v, want the imported QA", s.Top)
	}
	if got := s.Top[0]; math.Abs(got.TrustScore-read.TrustScore) > 1e-9 || got.ValidationLevel != read.ValidationLevel {
		t.Errorf("stats show trust %.4f level %d, Get %.4f level %d (the line claimed 0.99, level 3)",
			got.TrustScore, got.ValidationLevel, read.TrustScore, read.ValidationLevel)
	}
	if n := s.ByLevel[core.LevelName(read.ValidationLevel)]; n != 1 {
		t.Errorf("ByLevel %v: want the QA counted at %s as Get shows it", s.ByLevel, core.LevelName(read.ValidationLevel))
	}
}
