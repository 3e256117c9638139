package coretest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
)

// AgeFunc makes what a plugin stored d older, as if d had passed: the
// store's clock moves on, or the lifetimes of its keys shrink by d.
type AgeFunc func(t *testing.T, d time.Duration)

// RunEventWindow checks the event window (core.EventWindow) on the plugin
// newPlugin returns, aged by its AgeFunc: a candidate, a validation and a
// hit repeated with their event ids a minute before the window ends are
// applied once, and answered with their first results.
func RunEventWindow(t *testing.T, newPlugin func(t *testing.T) (core.MemoryPlugin, AgeFunc)) {
	p, age := newPlugin(t)
	ctx, vctx := as(t, "creator"), as(t, "agent-b")
	creq := core.CandidateRequest{ProjectID: projA, Question: "How to oil the marmot gearbox", Answer: "marmot oil --grade 5", EventID: "ev-window-cand"}
	c1, err := p.RecordCandidate(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	vreq := core.ValidateRequest{ProjectID: projA, QAID: c1.QAID, Result: "pass", SignalStrength: "strong", EventID: "ev-window-val"}
	v1, err := p.RecordValidation(vctx, vreq)
	if err != nil {
		t.Fatal(err)
	}
	hreq := core.HitRequest{ProjectID: projA, References: []core.HitRef{{QAID: c1.QAID, Shown: true, Used: true}}, EventID: "ev-window-hit"}
	h1, err := p.RecordHit(ctx, hreq)
	if err != nil {
		t.Fatal(err)
	}

	age(t, core.EventWindow-time.Minute)
	c2, err := p.RecordCandidate(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Errorf("candidate repeated inside the window: %+v then %+v", c1, c2)
	}
	v2, err := p.RecordValidation(vctx, vreq)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1, v2, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("validation repeated inside the window answered another result (-first +second):\n%s", diff)
	}
	h2, err := p.RecordHit(ctx, hreq)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(h1, h2) {
		t.Errorf("hit repeated inside the window: %+v then %+v", h1, h2)
	}
	if n := len(search(t, p, projA, "marmot gearbox", 50)); n != 1 {
		t.Errorf("candidate repeated inside the window: %d QAs, want 1", n)
	}
	if g, ok := core.As[core.Getter](p); ok {
		r := get(t, g, projA, c1.QAID)
		if r.SuccessCount != 1 || r.UsageCount != 1 || r.UseCount != 1 {
			t.Errorf("after the repeats: success %d usage %d use %d, want 1 1 1", r.SuccessCount, r.UsageCount, r.UseCount)
		}
	}
}
