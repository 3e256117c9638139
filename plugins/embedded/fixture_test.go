package embedded

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// The upgrade fixture: testdata/v1.db.gz was written by the schema 1 code
// (this file's fillFixture, run by that code with steppingClock(
// fixtureStart), then bolt.Compact). TestUpgradeFixture opens a copy with
// the current code (upgrading it) and compares its contents with the
// schema 1 ones.

// fixtureStart is the fixture clock's first reading.
var fixtureStart = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// steppingClock reads t, then t+1m, t+2m, …
func steppingClock(t time.Time) func() time.Time {
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Minute)
		return t
	}
}

// fillFixture writes a varied history: imported records in three
// projects (one sharing with another, global ones), candidates with
// evidence from runs and principals, duplicates, validations, hits, an
// answer edit, a status verdict, deletes and idempotent events.
func fillFixture(tb testing.TB, s *Store) {
	tb.Helper()
	ctx := context.Background()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	p := coretest.Corpus(160, "p", 1)
	g := coretest.Corpus(30, core.GlobalProject, 2)
	q := coretest.Corpus(40, "q", 3)
	for i := range q {
		if i%2 == 0 {
			q[i].SharedProjects = []string{"p"}
		}
	}
	for _, recs := range [][]core.Record{p[:100], g, q, p[100:]} {
		must(s.Import(ctx, recs))
	}
	var ids []string
	for i := range 40 {
		pass := &core.Evidence{Result: core.ResultPass, Strength: core.StrengthMedium}
		if i%3 == 0 {
			pass = nil
		}
		c := ctx
		if i%4 == 1 {
			c = core.WithPrincipal(ctx, core.Principal{ID: fmt.Sprintf("user-%d", i%3), Human: i%8 == 1})
		}
		// Ten widgets: candidate i names widget i%30 by its first digit,
		// the QA it folds into in the fixture (where "widget 17" was a
		// near duplicate of "widget 1"); numbers must match for a near
		// duplicate now, so the history names the widget it reports on.
		w := i % 30
		for w >= 10 {
			w /= 10
		}
		res, err := s.RecordCandidate(c, core.CandidateRequest{
			ProjectID: "p", RunID: fmt.Sprintf("run-%d", i), EventID: fmt.Sprintf("ev-%d", i),
			Question: fmt.Sprintf("how do I configure the widget number %d for deployment", w),
			Answer:   fmt.Sprintf("set widget.%d in config.yaml and run make deploy-%d", w, w),
			Tags:     []string{"t"}, Evidence: pass,
		})
		must(err)
		ids = append(ids, res.QAID)
	}
	for i, id := range ids {
		res, strength := "pass", "strong"
		if i%5 == 0 {
			res, strength = "fail", "weak"
		}
		_, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "p", QAID: id, RunID: fmt.Sprintf("val-%d", i%7), Result: res, SignalStrength: strength})
		must(err)
	}
	_, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "p", References: []core.HitRef{{QAID: p[0].QAID, Shown: true, Used: true}, {QAID: ids[1], Shown: true}}})
	must(err)
	answer := "rebuild the index with memex reindex --all"
	_, err = s.Patch(ctx, core.PatchRequest{ProjectID: "p", QAID: p[5].QAID, Answer: &answer})
	must(err)
	status := core.StatusDeprecated
	_, err = s.Patch(ctx, core.PatchRequest{ProjectID: "p", QAID: p[6].QAID, Status: &status})
	must(err)
	for _, id := range []string{p[7].QAID, p[130].QAID, ids[2]} {
		must(s.Delete(ctx, "p", id))
	}
	must(s.Delete(ctx, "q", q[4].QAID))
}
