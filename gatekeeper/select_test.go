package gatekeeper

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/memex-dev/memex/core"
)

// trustedM is a trusted match for the default profile.
func trustedM(id string, trust, rel float64) core.Match {
	m := mk(id, 2, trust, 0.5, 1)
	m.Relevance = rel
	return m
}

// candM is a new candidate with a posterior Beta(a, b).
func candM(id string, a, b, rel float64) core.Match {
	m := mk(id, 0, 0.26, 0.5, 0)
	m.Status, m.Alpha, m.Beta, m.Relevance = core.StatusCandidate, a, b, rel
	return m
}

func TestSelectDefaultFilters(t *testing.T) {
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	tests := []struct {
		name string
		m    core.Match
		want string // reason code
	}{
		{"empty id", trustedM("", 0.9, 0.9), ReasonFilteredInvalid},
		{"deprecated", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Status = core.StatusDeprecated }), ReasonFilteredStatus},
		{"stale is usable, never trusted", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Status = core.StatusStale }), ReasonSkippedStale},
		{"unknown status", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Status = "weird" }), ReasonFilteredStatus},
		{"candidate is usable", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Status = core.StatusCandidate }), ReasonChosenTrusted},
		{"expired", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.ExpiryAt = &past }), ReasonFilteredExpired},
		{"expires exactly now", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { t := now; m.ExpiryAt = &t }), ReasonFilteredExpired},
		{"not yet expired", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.ExpiryAt = &future }), ReasonChosenTrusted},
		{"relevance below min_score", trustedM("x", 0.9, 0.19), ReasonFilteredRelevance},
		{"relevance at min_score", trustedM("x", 0.9, 0.2), ReasonChosenTrusted},
		{"relevance NaN", trustedM("x", 0.9, math.NaN()), ReasonFilteredRelevance},
		{"quarantined", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Quarantined = true }), ReasonFilteredQuarantined},
		{"quarantined but verified", with(trustedM("x", 0.9, 0.9), func(m *core.Match) {
			m.Quarantined, m.Status = true, core.StatusVerified
		}), ReasonChosenTrusted},
		{"blocked", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.ConsecutiveFail = 3 }), ReasonFilteredBlocked},
		{"question-only, even verified", with(trustedM("x", 0.9, 0.9), func(m *core.Match) {
			m.Answer, m.Status = " ", core.StatusVerified
		}), ReasonFilteredNoAnswer},
		{"blocked via stats", with(trustedM("x", 0.9, 0.9), func(m *core.Match) {
			m.Metadata["stats"] = map[string]any{"consecutive_fail": "3"}
		}), ReasonFilteredBlocked},
		{"verified is exempt from the block", with(trustedM("x", 0.9, 0.9), func(m *core.Match) {
			m.ConsecutiveFail, m.Status = 5, core.StatusVerified
		}), ReasonChosenTrusted},
		{"zero freshness is fine", with(trustedM("x", 0.9, 0.9), func(m *core.Match) { m.Freshness = 0 }), ReasonChosenTrusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Select([]core.Match{tt.m}, DefaultConfig(), now, nil)
			if got := d.Reasons[0].Code; got != tt.want {
				t.Fatalf("reason = %q (%s), want %q", got, d.Reasons[0].Detail, tt.want)
			}
			if chosen := len(d.Items) == 1; chosen != (tt.want == ReasonChosenTrusted) {
				t.Fatalf("chosen = %t with reason %q", chosen, tt.want)
			}
		})
	}
}

func TestSelectDefaultTrustedOrder(t *testing.T) {
	t0 := now.Add(-48 * time.Hour)
	tests := []struct {
		name string
		in   []core.Match
		want []string
	}{
		{
			name: "trust x relevance, not level first",
			in:   []core.Match{with(trustedM("l3", 0.5, 0.5), func(m *core.Match) { m.ValidationLevel = 3 }), trustedM("l2", 0.8, 0.9)},
			want: []string{"l2", "l3"},
		},
		{
			name: "relevance matters",
			in:   []core.Match{trustedM("trusty-offtopic", 0.95, 0.25), trustedM("relevant", 0.6, 0.9)},
			want: []string{"relevant", "trusty-offtopic"},
		},
		{
			name: "ties: newer first",
			in: []core.Match{with(trustedM("old", 0.5, 0.8), func(m *core.Match) { m.UpdatedAt = t0 }),
				with(trustedM("new", 0.5, 0.8), func(m *core.Match) { m.UpdatedAt = now })},
			want: []string{"new", "old"},
		},
		{
			name: "ties: then qa_id",
			in:   []core.Match{trustedM("b", 0.5, 0.8), trustedM("a", 0.5, 0.8), trustedM("c", 0.5, 0.8)},
			want: []string{"a", "b", "c"},
		},
		{
			name: "max_inject",
			in:   []core.Match{trustedM("a", 0.9, 0.9), trustedM("b", 0.8, 0.9), trustedM("c", 0.7, 0.9), trustedM("d", 0.6, 0.9)},
			want: []string{"a", "b", "c"},
		},
		{
			name: "stale never trusted",
			in:   []core.Match{with(trustedM("s", 0.9, 0.9), func(m *core.Match) { m.Status = core.StatusStale }), trustedM("a", 0.5, 0.5)},
			want: []string{"a"},
		},
		{
			name: "level and trust thresholds",
			in:   []core.Match{with(trustedM("l1", 0.9, 0.9), func(m *core.Match) { m.ValidationLevel = 1 }), trustedM("low", 0.39, 0.9)},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ExploreSlots = 0
			d := Select(tt.in, cfg, now, seeded(1))
			if diff := cmp.Diff(tt.want, ids(d.Items)); diff != "" {
				t.Fatalf("items (-want +got):\n%s", diff)
			}
			if !d.WriteCandidate {
				t.Error("default profile suppressed the candidate")
			}
		})
	}
}

func TestSelectProbation(t *testing.T) {
	t.Run("fills a free slot second", func(t *testing.T) {
		in := []core.Match{trustedM("t1", 0.9, 0.9), trustedM("t2", 0.8, 0.9), candM("new", 50, 1, 0.8)}
		d := Select(in, DefaultConfig(), now, seeded(7))
		if diff := cmp.Diff([]string{"t1", "new", "t2"}, ids(d.Items)); diff != "" {
			t.Fatalf("items (-want +got):\n%s", diff)
		}
		if !d.Items[1].Probation || d.Items[0].Probation || d.Items[2].Probation {
			t.Fatalf("probation flags wrong: %+v", d.Items)
		}
		if len(d.Draws) != 1 || !d.Draws[0].Took || d.Draws[0].QAID != "new" {
			t.Fatalf("draws = %+v", d.Draws)
		}
		if math.Abs(d.Draws[0].Value-d.Draws[0].Theta*0.8) > 1e-12 {
			t.Fatalf("value %v != theta %v × relevance", d.Draws[0].Value, d.Draws[0].Theta)
		}
		mustEqual(t, "reason", reasonFor(d, "new"), ReasonChosenProbation)
	})
	t.Run("first when nothing is trusted", func(t *testing.T) {
		d := Select([]core.Match{candM("new", 50, 1, 0.8)}, DefaultConfig(), now, seeded(7))
		if len(d.Items) != 1 || !d.Items[0].Probation {
			t.Fatalf("items = %+v", d.Items)
		}
	})
	t.Run("theta below 0.4 never enters", func(t *testing.T) {
		for seed := range uint64(200) {
			d := Select([]core.Match{candM("bad", 1, 200, 0.9)}, DefaultConfig(), now, seeded(seed))
			if len(d.Items) != 0 {
				t.Fatalf("seed %d: injected %+v (draws %+v)", seed, d.Items, d.Draws)
			}
			mustEqual(t, "reason", reasonFor(d, "bad"), ReasonProbationLow)
		}
	})
	t.Run("best theta x relevance wins, every draw recorded", func(t *testing.T) {
		in := []core.Match{candM("lo", 200, 1, 0.3), candM("hi", 200, 1, 0.9), candM("mid", 200, 1, 0.6)}
		d := Select(in, DefaultConfig(), now, seeded(9))
		if diff := cmp.Diff([]string{"hi"}, ids(d.Items)); diff != "" {
			t.Fatalf("items (-want +got):\n%s", diff)
		}
		if len(d.Draws) != 3 {
			t.Fatalf("draws = %+v", d.Draws)
		}
		took := 0
		for _, dr := range d.Draws {
			if dr.Took {
				took++
			}
		}
		mustEqual(t, "draws taken", took, 1)
		mustEqual(t, "reason lo", reasonFor(d, "lo"), ReasonProbationLost)
	})
	t.Run("trusted matches beyond max_inject are not explored", func(t *testing.T) {
		in := []core.Match{trustedM("a", 0.9, 0.9), trustedM("b", 0.8, 0.9), trustedM("c", 0.7, 0.9), trustedM("d", 0.6, 0.9)}
		d := Select(in, DefaultConfig(), now, seeded(1))
		if len(d.Draws) != 0 {
			t.Fatalf("draws = %+v", d.Draws)
		}
	})
	t.Run("derived posterior when alpha and beta are absent", func(t *testing.T) {
		a, b := posterior(mk("x", 0, 0.9, 0, 0))
		if math.Abs(a-4.6) > 1e-12 || math.Abs(b-1.4) > 1e-12 {
			t.Fatalf("posterior = Beta(%v, %v), want Beta(4.6, 1.4)", a, b)
		}
		a, b = posterior(with(mk("x", 0, 0.9, 0, 0), func(m *core.Match) { m.Alpha, m.Beta = 3, 7 }))
		if a != 3 || b != 7 {
			t.Fatalf("posterior = Beta(%v, %v), want the match's Beta(3, 7)", a, b)
		}
		a, b = posterior(with(mk("x", 0, math.NaN(), 0, 0), func(m *core.Match) { m.Alpha = -1 }))
		if a != 1 || b != 5 {
			t.Fatalf("posterior of NaN trust = Beta(%v, %v), want Beta(1, 5)", a, b)
		}
	})
	t.Run("nil rng or explore_slots 0 disables it", func(t *testing.T) {
		in := []core.Match{candM("new", 50, 1, 0.8)}
		if d := Select(in, DefaultConfig(), now, nil); len(d.Items) != 0 || len(d.Draws) != 0 {
			t.Fatalf("nil rng: %+v", d)
		}
		cfg := DefaultConfig()
		cfg.ExploreSlots = 0
		if d := Select(in, cfg, now, seeded(1)); len(d.Items) != 0 || !hasReason(d, ReasonProbationOff) {
			t.Fatalf("explore_slots 0: %+v", d)
		}
	})
	t.Run("two explore slots", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.ExploreSlots = 2
		in := []core.Match{trustedM("t", 0.9, 0.9), candM("x", 200, 1, 0.9), candM("y", 200, 1, 0.8), candM("z", 200, 1, 0.7)}
		d := Select(in, cfg, now, seeded(2))
		if diff := cmp.Diff([]string{"t", "x", "y"}, ids(d.Items)); diff != "" {
			t.Fatalf("items (-want +got):\n%s", diff)
		}
	})
}

// TestSelectProbationEpsilon checks that with a full trusted set the
// exploration item displaces the last trusted item with probability
// ε = clamp(0.5·(1 − best trusted trust), 0.05, 0.5).
func TestSelectProbationEpsilon(t *testing.T) {
	for _, tc := range []struct {
		best, eps float64
	}{{0.5, 0.25}, {0.95, 0.05}, {0.8, 0.1}} {
		in := []core.Match{trustedM("a", tc.best, 0.9), trustedM("b", 0.45, 0.9), trustedM("c", 0.41, 0.9), candM("new", 500, 1, 0.9)}
		const n = 4000
		replaced := 0
		for seed := range uint64(n) {
			d := Select(in, DefaultConfig(), now, seeded(seed))
			switch got := ids(d.Items); {
			case slices.Equal(got, []string{"a", "new", "b"}):
				replaced++
				mustEqual(t, "displaced reason", reasonFor(d, "c"), ReasonDisplaced)
			case slices.Equal(got, []string{"a", "b", "c"}):
				mustEqual(t, "skip reason", reasonFor(d, "new"), ReasonProbationSkipped)
			default:
				t.Fatalf("unexpected items %v", got)
			}
		}
		p := float64(replaced) / n
		sd := math.Sqrt(tc.eps * (1 - tc.eps) / n)
		if math.Abs(p-tc.eps) > 5*sd {
			t.Errorf("best trust %.2f: displaced %.3f of runs, want ε=%.3f (±%.3f)", tc.best, p, tc.eps, 5*sd)
		}
	}
}

func TestSelectDeterministic(t *testing.T) {
	in := []core.Match{trustedM("t", 0.7, 0.9), candM("a", 3, 3, 0.9), candM("b", 3, 3, 0.8), candM("c", 2, 2, 0.7),
		candM("d", 5, 1, 0.5)}
	rev := slices.Clone(in)
	slices.Reverse(rev)
	for seed := range uint64(50) {
		d1 := Select(in, DefaultConfig(), now, seeded(seed))
		d2 := Select(in, DefaultConfig(), now, seeded(seed))
		d3 := Select(rev, DefaultConfig(), now, seeded(seed))
		if diff := cmp.Diff(d1, d2); diff != "" {
			t.Fatalf("seed %d not deterministic:\n%s", seed, diff)
		}
		if diff := cmp.Diff(ids(d1.Items), ids(d3.Items)); diff != "" {
			t.Fatalf("seed %d depends on input order:\n%s", seed, diff)
		}
		if diff := cmp.Diff(d1.Draws, d3.Draws); diff != "" {
			t.Fatalf("seed %d draws depend on input order:\n%s", seed, diff)
		}
	}
}

// TestSelectExploresEveryCandidate checks that over many runs each new
// candidate gets shown sometimes, better posteriors more often.
func TestSelectExploresEveryCandidate(t *testing.T) {
	in := []core.Match{candM("good", 8, 2, 0.8), candM("meh", 3, 3, 0.8), candM("new", 0, 0, 0.8)}
	in[2].Trust = 0.26
	shown := map[string]int{}
	for seed := range uint64(2000) {
		for _, it := range Select(in, DefaultConfig(), now, seeded(seed)).Items {
			shown[it.QAID]++
		}
	}
	if shown["meh"] == 0 || shown["new"] == 0 || shown["good"] <= shown["meh"] {
		t.Fatalf("shown counts %v: want every candidate sometimes, good most", shown)
	}
}

func TestBetaSample(t *testing.T) {
	for _, tc := range []struct{ a, b float64 }{{1, 1}, {0.5, 0.5}, {2, 5}, {30, 3}, {0.1, 2}, {3, 3}} {
		rng := seeded(11)
		const n = 40000
		var sum, sq float64
		for range n {
			x := BetaSample(rng, tc.a, tc.b)
			if !(x >= 0 && x <= 1) {
				t.Fatalf("Beta(%v,%v) drew %v", tc.a, tc.b, x)
			}
			sum += x
			sq += x * x
		}
		mean, vr := sum/n, sq/n-(sum/n)*(sum/n)
		wantMean := tc.a / (tc.a + tc.b)
		wantVar := tc.a * tc.b / ((tc.a + tc.b) * (tc.a + tc.b) * (tc.a + tc.b + 1))
		if math.Abs(mean-wantMean) > 5*math.Sqrt(wantVar/n) {
			t.Errorf("Beta(%v,%v) mean %.4f, want %.4f", tc.a, tc.b, mean, wantMean)
		}
		if math.Abs(vr-wantVar)/wantVar > 0.05 {
			t.Errorf("Beta(%v,%v) variance %.5f, want %.5f", tc.a, tc.b, vr, wantVar)
		}
	}
	if x := BetaSample(seeded(1), math.NaN(), -2); !(x >= 0 && x <= 1) {
		t.Fatalf("bad shapes drew %v", x)
	}
}

// A QA a human verified is trusted, whatever its evidence so far: it is
// in the trusted set and rendered as verified, never as the unverified
// probation item (issue 15 item 5).
func TestSelectHumanVerified(t *testing.T) {
	verified := with(mk("qa-human", 0, 0.26, 0.5, 0), func(m *core.Match) { m.Status = core.StatusVerified })
	cand := with(mk("qa-cand", 0, 0.26, 0.5, 0), func(m *core.Match) { m.Status = core.StatusCandidate })
	d := Select([]core.Match{cand, verified}, DefaultConfig(), now, seeded(1))
	var it *Item
	for i := range d.Items {
		if d.Items[i].QAID == "qa-human" {
			it = &d.Items[i]
		}
	}
	if it == nil || it.Probation || it.Why != ReasonChosenTrusted {
		t.Fatalf("verified QA: %+v, want it chosen as trusted (reasons %+v)", it, d.Reasons)
	}
	b := Render(d.Items, DefaultConfig(), now)
	head := "[QA_REF qa-human]  (level 0, trust 0.26, " + VerifiedLabel + ")"
	if !strings.Contains(b.Text, head) {
		t.Errorf("block does not render the verified QA as verified:\n%s", b.Text)
	}
	// The compatibility profile keeps the original's rules.
	c := Select([]core.Match{verified}, CompatConfig(), now, nil)
	if len(c.Items) != 0 {
		t.Errorf("compat profile took a level-0 verified QA: %v", ids(c.Items))
	}
}

// TestSelectStaleThroughProbation: a stale QA is never trusted, but the
// probation slot may show it, labelled stale, so a run can earn it the pass
// that clears it or the fail that deprecates it.
func TestSelectStaleThroughProbation(t *testing.T) {
	stale := with(candM("stale", 40, 2, 0.9), func(m *core.Match) { m.Status, m.ValidationLevel = core.StatusStale, 3 })
	d := Select([]core.Match{trustedM("t1", 0.9, 0.9), stale}, DefaultConfig(), now, seeded(3))
	var got *Item
	for i := range d.Items {
		if d.Items[i].QAID == "stale" {
			got = &d.Items[i]
		}
	}
	if got == nil || !got.Probation {
		t.Fatalf("items %v, reasons %v: want the stale QA in the probation slot", ids(d.Items), d.Reasons)
	}
	b := Render(d.Items, DefaultConfig(), now)
	if !strings.Contains(b.Text, StaleLabel) || strings.Count(b.Text, ProbationLabel) != 0 {
		t.Errorf("block does not label the stale item stale:\n%s", b.Text)
	}
}
