package coretest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// RandomWriter makes random writes of every kind over a few projects —
// candidates (quarantined ones, ones with evidence, duplicates),
// validations, hits, verdicts, edits, deletes, imports (over earlier
// imports too), expiry and time passing — for the tests that compare the
// statistics a store keeps write by write with a scan of its records.
type RandomWriter struct {
	Projects []string
	r        *rand.Rand
	now      *time.Time
	ids      []struct{ project, id string }
}

// NewRandomWriter returns a writer seeded with seed over projects; *now
// is the store's clock, which expiry steps move forward.
func NewRandomWriter(seed uint64, now *time.Time, projects ...string) *RandomWriter {
	return &RandomWriter{Projects: projects, r: rand.New(rand.NewPCG(seed, 7)), now: now}
}

// Write makes the step-th random write to p (which must be a Patcher,
// Deleter, Expirer and Importer). A write that meets a QA deleted, of
// another project, frozen or otherwise refused fails as it should; only
// other errors fail the test.
func (w *RandomWriter) Write(t *testing.T, p core.MemoryPlugin, step int) {
	t.Helper()
	r := w.r
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "creator"})
	if len(w.ids) == 0 || r.IntN(4) == 0 {
		proj := w.Projects[r.IntN(len(w.Projects))]
		req := core.CandidateRequest{ProjectID: proj, Question: fmt.Sprintf("how do I configure widget %d for %s?", r.IntN(40), proj),
			Answer: "set widget mode " + fmt.Sprint(r.IntN(3)), Metadata: map[string]any{}}
		if r.IntN(6) == 0 {
			req.Metadata["quarantined"] = true
		}
		if r.IntN(3) == 0 {
			req.Evidence = &core.Evidence{Result: core.ResultPass, Strength: core.StrengthWeak}
			req.RunID = fmt.Sprintf("run-%d", step)
		}
		res, err := p.RecordCandidate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		w.ids = append(w.ids, struct{ project, id string }{proj, res.QAID})
		return
	}
	x := w.ids[r.IntN(len(w.ids))]
	proj, id := x.project, x.id
	vctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("src-%d", r.IntN(5))})
	var err error
	switch r.IntN(9) {
	case 0, 1, 2:
		res := []string{"pass", "fail"}[r.IntN(2)]
		st := []string{"strong", "medium", "weak"}[r.IntN(3)]
		_, err = p.RecordValidation(vctx, core.ValidateRequest{ProjectID: proj, QAID: id, Result: res, SignalStrength: st, RunID: fmt.Sprintf("run-%d", step)})
	case 3:
		_, err = p.RecordHit(vctx, core.HitRequest{ProjectID: proj, RunID: fmt.Sprintf("run-%d", step), References: []core.HitRef{{QAID: id, Shown: true, Used: r.IntN(2) == 0}}})
	case 4:
		st := []core.Status{core.StatusVerified, core.StatusFrozen, core.StatusDeprecated, core.StatusActive}[r.IntN(4)]
		_, err = must[core.Patcher](t, p).Patch(ctx, core.PatchRequest{ProjectID: proj, QAID: id, Status: &st})
	case 5:
		a := fmt.Sprintf("edited answer %d", step)
		_, err = must[core.Patcher](t, p).Patch(ctx, core.PatchRequest{ProjectID: proj, QAID: id, Answer: &a})
	case 6:
		err = must[core.Deleter](t, p).Delete(ctx, proj, id)
	case 7:
		*w.now = w.now.Add(time.Duration(r.IntN(20)) * 24 * time.Hour)
		_, err = must[core.Expirer](t, p).Expire(ctx, *w.now, 100)
	case 8:
		now := *w.now
		imp := fmt.Sprintf("qa_imp%04d", step%40)
		err = must[core.Importer](t, p).Import(ctx, []core.Record{{QAID: imp, ProjectID: proj, Question: fmt.Sprintf("imported %d", step),
			Answer: "imported answer", Status: core.StatusActive, ValidationLevel: r.IntN(4), SuccessCount: int64(r.IntN(5)),
			UsageCount: int64(r.IntN(5)), Quarantined: r.IntN(5) == 0, TrustScore: r.Float64(), CreatedAt: now, UpdatedAt: now}})
		if err == nil {
			w.ids = append(w.ids, struct{ project, id string }{proj, imp})
		}
	}
	for _, ok := range []error{core.ErrNotFound, core.ErrConflict, core.ErrInvalid, core.ErrForbidden} {
		if errors.Is(err, ok) {
			return
		}
	}
	if err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
}

func must[T any](t *testing.T, p core.MemoryPlugin) T {
	t.Helper()
	x, ok := core.As[T](p)
	if !ok {
		var zero T
		t.Fatalf("the store is no %T", zero)
	}
	return x
}
