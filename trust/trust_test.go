package trust

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

func near(tb testing.TB, name string, got, want float64) {
	tb.Helper()
	if math.Abs(got-want) > 1e-9 {
		tb.Errorf("%s = %.12f, want %.12f", name, got, want)
	}
}

// book is a Reputation a test can fill and apply effects to.
type book struct {
	src map[string]SourceRep
	cre map[string]CreatorRep
}

func newBook() *book { return &book{src: map[string]SourceRep{}, cre: map[string]CreatorRep{}} }

func (b *book) Source(id string) SourceRep   { return b.src[id] }
func (b *book) Creator(id string) CreatorRep { return b.cre[id] }

func (b *book) add(creator string, e Effects) {
	for id, d := range e.Sources {
		r := b.src[id]
		r.Agree += d.Agree
		r.Disagree += d.Disagree
		b.src[id] = r
	}
	c := b.cre[creator]
	c.Proven += e.Creator.Proven
	c.Rejected += e.Creator.Rejected
	b.cre[creator] = c
}

// veterans is a book where every source has agreed ten times, so a single
// disagreement leaves its weight at 1.
type veterans struct{}

func (veterans) Source(string) SourceRep   { return SourceRep{Agree: 10} }
func (veterans) Creator(string) CreatorRep { return CreatorRep{} }

func vote(src string, r core.Result, s core.Strength, at time.Time) Vote {
	return Vote{Source: src, Result: r, Strength: s, At: at}
}

func pass(src string, at time.Time) Vote { return vote(src, core.ResultPass, core.StrengthStrong, at) }
func fail(src string, at time.Time) Vote { return vote(src, core.ResultFail, core.StrengthStrong, at) }

func TestScoreLowerBound(t *testing.T) {
	m := New(DefaultParams())
	tests := []struct {
		name               string
		votes              []Vote
		trust, mean, upper float64
		alpha, beta        float64
	}{
		// Beta(3,3): m = .5, sd = sqrt(.25/7) = .188982; .5 − 1.2816·sd.
		{"no evidence", nil, 0.257800365696, 0.5, 0.742199634304, 3, 3},
		// Beta(4,3): m = 4/7, sd = sqrt((12/49)/8).
		{"one strong pass", []Vote{pass("a", t0)}, 0.347195281832, 4.0 / 7, 0.795661861025, 4, 3},
		// Beta(5,3): m = .625, sd = sqrt(.234375/9) = .161374; the trusted threshold.
		{"two independent strong passes", []Vote{pass("a", t0), pass("b", t0)}, 0.418182689313, 0.625, 0.831817310687, 5, 3},
		// One vote per source: ten passes from one source are one unit.
		{"ten passes from one source", []Vote{pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0), pass("a", t0)}, 0.347195281832, 4.0 / 7, 0.795661861025, 4, 3},
		// Two medium passes are one unit: Beta(4,3).
		{"two medium passes", []Vote{vote("a", core.ResultPass, core.StrengthMedium, t0), vote("b", core.ResultPass, core.StrengthMedium, t0)}, 0.347195281832, 4.0 / 7, 0.795661861025, 4, 3},
		// Beta(3,4).
		{"one strong fail", []Vote{fail("a", t0)}, 0.204338138975, 3.0 / 7, 0.652804718168, 3, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState("creator", t0)
			for _, v := range tc.votes {
				m.Apply(st, v, NoReputation)
			}
			sc := m.Score(st, NoReputation, t0)
			near(t, "trust", sc.Trust, tc.trust)
			near(t, "mean", sc.Mean, tc.mean)
			near(t, "upper", sc.Upper, tc.upper)
			near(t, "alpha", sc.Alpha, tc.alpha)
			near(t, "beta", sc.Beta, tc.beta)
		})
	}
}

func TestEvidenceDiscountAndCap(t *testing.T) {
	m := New(DefaultParams())
	tests := []struct {
		name  string
		votes []Vote
		s, f  float64
	}{
		{"weak pass", []Vote{vote("a", core.ResultPass, core.StrengthWeak, t0)}, 0.2, 0},
		{"medium pass", []Vote{vote("a", core.ResultPass, core.StrengthMedium, t0)}, 0.5, 0},
		{"weak then medium adds", []Vote{vote("a", core.ResultPass, core.StrengthWeak, t0), vote("a", core.ResultPass, core.StrengthMedium, t0)}, 0.7, 0},
		{"two strong passes cap at one", []Vote{pass("a", t0), pass("a", t0)}, 1, 0},
		// S = 1·2^(−1) = .5, then F = 1: S+F = 1.5 → scale to 1/3, 2/3.
		{"fail a half-life after a pass", []Vote{pass("a", t0), fail("a", t0.Add(90*day))}, 1.0 / 3, 2.0 / 3},
		// Same day: .5 + .5 = 1, no scaling needed beyond the cap.
		{"pass then fail same day", []Vote{pass("a", t0), fail("a", t0)}, 0.5, 0.5},
		// Old report after a newer one: no discount (Δt < 0 counts as 0).
		{"report out of order", []Vote{vote("a", core.ResultPass, core.StrengthWeak, t0.Add(10*day)), vote("a", core.ResultPass, core.StrengthWeak, t0)}, 0.4, 0},
		// A human verdict is strong whatever strength it carries.
		{"human weak vote is strong", []Vote{{Source: "h", Result: core.ResultPass, Strength: core.StrengthWeak, At: t0, Human: true}}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState("creator", t0)
			for _, v := range tc.votes {
				m.Apply(st, v, NoReputation)
			}
			e := st.Sources[tc.votes[0].Source]
			near(t, "S", e.S, tc.s)
			near(t, "F", e.F, tc.f)
		})
	}
	t.Run("discount halves at the half-life", func(t *testing.T) {
		near(t, "d(90d)", m.Decay(90*day), 0.5)
		near(t, "d(180d)", m.Decay(180*day), 0.25)
		near(t, "d(0)", m.Decay(0), 1)
		near(t, "d(-1d)", m.Decay(-day), 1)
	})
	t.Run("score discounts evidence to now", func(t *testing.T) {
		st := NewState("creator", t0)
		m.Apply(st, pass("a", t0), NoReputation)
		m.Apply(st, pass("b", t0), NoReputation)
		sc := m.Score(st, NoReputation, t0.Add(90*day))
		near(t, "alpha", sc.Alpha, 4) // 3 + 2·.5
	})
}

func TestCreatorAndFrozenVotesDoNotCount(t *testing.T) {
	tests := []struct {
		name         string
		countCreator bool
		status       core.Status
		src          string
		counted      bool
	}{
		{"creator in service", false, core.StatusCandidate, "creator", false},
		{"creator in embedded store", true, core.StatusCandidate, "creator", true},
		{"other source", false, core.StatusCandidate, "a", true},
		{"frozen QA", false, core.StatusFrozen, "a", false},
		{"frozen QA embedded creator", true, core.StatusFrozen, "creator", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.CountCreator = tc.countCreator
			m := New(p)
			st := NewState("creator", t0)
			st.Status = tc.status
			before, _ := json.Marshal(st)
			eff := m.Apply(st, pass(tc.src, t0), NoReputation)
			if eff.Counted != tc.counted {
				t.Fatalf("Counted = %v, want %v", eff.Counted, tc.counted)
			}
			after, _ := json.Marshal(st)
			if changed := string(before) != string(after); changed != tc.counted {
				t.Errorf("state changed = %v, want %v\nbefore %s\nafter  %s", changed, tc.counted, before, after)
			}
			sc := m.Score(st, NoReputation, t0)
			wantAlpha := 3.0
			if tc.counted {
				wantAlpha = 4
			}
			near(t, "alpha", sc.Alpha, wantAlpha)
		})
	}
	t.Run("creator evidence ignored at score time in the service", func(t *testing.T) {
		emb := DefaultParams()
		emb.CountCreator = true
		st := NewState("creator", t0)
		New(emb).Apply(st, pass("creator", t0), NoReputation)
		near(t, "service alpha", New(DefaultParams()).Score(st, NoReputation, t0).Alpha, 3)
		near(t, "embedded alpha", New(emb).Score(st, NoReputation, t0).Alpha, 4)
	})
}

func TestSourceWeight(t *testing.T) {
	tests := []struct {
		name string
		rep  SourceRep
		want float64
	}{
		{"new source", SourceRep{}, 1},                                // r = 2/3 → 1.06 → 1
		{"one disagreement", SourceRep{Disagree: 1}, 0.5},             // r = 2/4
		{"agree 1 disagree 2", SourceRep{Agree: 1, Disagree: 2}, 0.5}, // r = 3/6
		{"three disagreements", SourceRep{Disagree: 3}, 0},            // r = 1/3 < .35
		{"disagree 2.5", SourceRep{Disagree: 2.5}, (2/5.5 - 0.35) / 0.30},
		{"disagree 2", SourceRep{Disagree: 2}, 1.0 / 6},               // r = .4
		{"agree 2 disagree 3", SourceRep{Agree: 2, Disagree: 3}, 0.5}, // r = 4/8
		{"trusted liar", SourceRep{Disagree: 100, Trusted: true}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { near(t, "w", tc.rep.Weight(), tc.want) })
	}
	t.Run("weight scales posterior", func(t *testing.T) {
		m := New(DefaultParams())
		b := newBook()
		b.src["half"] = SourceRep{Disagree: 1}
		b.src["zero"] = SourceRep{Disagree: 3}
		st := NewState("creator", t0)
		m.Apply(st, pass("half", t0), b)
		m.Apply(st, pass("zero", t0), b)
		sc := m.Score(st, b, t0)
		near(t, "alpha", sc.Alpha, 3.5)
		near(t, "trust", sc.Trust, 0.305167758461) // Beta(3.5,3)
		if sc.Level != 1 {
			t.Errorf("level = %d, want 1 (the zero-weight source does not count)", sc.Level)
		}
	})
}

func TestCreatorPrior(t *testing.T) {
	tests := []struct {
		name       string
		rep        CreatorRep
		a0, b0     float64
		emptyTrust float64
	}{
		{"new creator", CreatorRep{}, 3, 3, 0.257800365696},
		{"proven 3 rejected 1", CreatorRep{Proven: 3, Rejected: 1}, 1 + 4*4.0/6, 1 + 4*2.0/6, 0},
		{"rejected 8", CreatorRep{Rejected: 8}, 1.4, 4.6, 0},
	}
	m := New(DefaultParams())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a0, b0 := tc.rep.Prior()
			near(t, "alpha0", a0, tc.a0)
			near(t, "beta0", b0, tc.b0)
			b := newBook()
			b.cre["c"] = tc.rep
			sc := m.Score(NewState("c", t0), b, t0)
			near(t, "alpha", sc.Alpha, tc.a0)
			near(t, "beta", sc.Beta, tc.b0)
			if tc.emptyTrust > 0 {
				near(t, "trust", sc.Trust, tc.emptyTrust)
			}
		})
	}
}

func TestLevelAndFreshness(t *testing.T) {
	m := New(DefaultParams())
	tests := []struct {
		name   string
		votes  []Vote
		at     time.Time
		level  int
		fresh  float64
		status core.Status
	}{
		{"no evidence", nil, t0, 0, 0, core.StatusCandidate},
		{"weak pass is below the level floor", []Vote{vote("a", core.ResultPass, core.StrengthWeak, t0)}, t0, 0, 1, core.StatusActive},
		{"medium pass counts", []Vote{vote("a", core.ResultPass, core.StrengthMedium, t0)}, t0, 1, 1, core.StatusActive},
		{"two sources", []Vote{pass("a", t0), pass("b", t0)}, t0, 2, 1, core.StatusActive},
		{"capped at three", []Vote{pass("a", t0), pass("b", t0), pass("c", t0), pass("d", t0)}, t0, 3, 1, core.StatusActive},
		// S·d = 1·2^(−2) = .25 ≥ .25 at 180 days; below a day later.
		{"at 180 days still counts", []Vote{pass("a", t0)}, t0.Add(180 * day), 1, 0.25, core.StatusActive},
		{"at 181 days no longer", []Vote{pass("a", t0)}, t0.Add(181 * day), 0, math.Exp2(-181.0 / 90), core.StatusActive},
		{"net fail does not count", []Vote{pass("a", t0), fail("a", t0.Add(day)), fail("a", t0.Add(day))}, t0.Add(day), 0, math.Exp2(-1.0 / 90), core.StatusActive},
		{"only fails never fresh", []Vote{fail("a", t0)}, t0, 0, 0, core.StatusCandidate},
		// Freshness from the last counted pass: d(45 days) after a pass at day 45.
		{"freshness from last pass", []Vote{pass("a", t0), pass("b", t0.Add(45*day)), fail("c", t0.Add(80*day))}, t0.Add(90 * day), 2, math.Exp2(-45.0 / 90), core.StatusActive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState("creator", t0)
			for _, v := range tc.votes {
				m.Apply(st, v, NoReputation)
			}
			sc := m.Score(st, NoReputation, tc.at)
			if sc.Level != tc.level {
				t.Errorf("level = %d, want %d", sc.Level, tc.level)
			}
			near(t, "freshness", sc.Freshness, tc.fresh)
			if sc.Status != tc.status {
				t.Errorf("status = %s, want %s", sc.Status, tc.status)
			}
		})
	}
	t.Run("zero-weight pass neither activates nor freshens", func(t *testing.T) {
		b := newBook()
		b.src["liar"] = SourceRep{Disagree: 3}
		st := NewState("creator", t0)
		m.Apply(st, pass("liar", t0), b)
		if st.Status != core.StatusCandidate || !st.LastPass.IsZero() {
			t.Errorf("status %s last pass %v, want candidate and never", st.Status, st.LastPass)
		}
	})
}

func TestConsecutiveFail(t *testing.T) {
	m := New(DefaultParams())
	b := newBook()
	b.src["liar"] = SourceRep{Disagree: 3}
	st := NewState("creator", t0)
	steps := []struct {
		v    Vote
		want int
	}{
		{fail("a", t0), 1},
		{vote("b", core.ResultFail, core.StrengthWeak, t0), 1}, // 1.2 units
		{fail("liar", t0), 1}, // zero weight: not counted
		{fail("a", t0), 1},    // one source counts once
		{vote("e", core.ResultFail, core.StrengthMedium, t0), 1}, // 1.7
		{vote("g", core.ResultFail, core.StrengthMedium, t0), 2}, // 2.2
		{fail("h", t0), 3}, // 3.2
		{pass("c", t0), 0},
		{fail("d", t0), 1},
	}
	for i, s := range steps {
		m.Apply(st, s.v, b)
		if st.ConsecutiveFail != s.want {
			t.Fatalf("step %d: consecutive_fail = %d, want %d", i, st.ConsecutiveFail, s.want)
		}
	}
	if got := m.Score(st, b, t0).ConsecutiveFail; got != 1 {
		t.Errorf("Scores.ConsecutiveFail = %d, want 1", got)
	}
	t.Run("fails the consensus contradicts do not count", func(t *testing.T) {
		st := trustedQA(m)
		for _, id := range []string{"p3", "p4", "p5", "p6"} {
			m.Apply(st, pass(id, t0), veterans{})
		}
		for _, id := range []string{"x", "y", "z", "u"} {
			m.Apply(st, fail(id, t0), veterans{})
		}
		// Six passers: Beta(7,1), Beta(7,2), Beta(7,3) decide "pass" for the
		// first three failers (lower bounds .74, .61, .52), so their fails do
		// not count; the fourth sees Beta(7,4) (lower .46, undecided) and
		// counts. The posterior sees all four.
		sc := m.Score(st, veterans{}, t0)
		if sc.ConsecutiveFail != 1 {
			t.Errorf("consecutive_fail = %d, want 1", sc.ConsecutiveFail)
		}
		near(t, "beta", sc.Beta, 7)
	})
	// d is later found to disagree with everyone: its fail stops counting.
	b.src["d"] = SourceRep{Disagree: 3}
	if got := m.Score(st, b, t0).ConsecutiveFail; got != 0 {
		t.Errorf("Scores.ConsecutiveFail after d lost its weight = %d, want 0", got)
	}
}

// trustedQA returns an active QA with two independent strong passes.
func trustedQA(m *Model) *State {
	st := NewState("creator", t0)
	m.Apply(st, pass("p1", t0), NoReputation)
	m.Apply(st, pass("p2", t0), NoReputation)
	return st
}

func TestCUSUMAndStale(t *testing.T) {
	m := New(DefaultParams())
	lf := math.Log(0.9 / 0.4)
	vet := veterans{}
	t.Run("five independent strong fails raise the alarm", func(t *testing.T) {
		st := trustedQA(m)
		for i := 1; i <= 5; i++ {
			m.Apply(st, fail(fmt.Sprintf("f%d", i), t0), vet)
			near(t, fmt.Sprintf("g after %d fails", i), st.CUSUM, float64(i)*lf)
			want := core.StatusActive
			if i == 5 { // 5·.8109 = 4.05 ≥ 4; 4·.8109 = 3.24
				want = core.StatusStale
			}
			if st.Status != want {
				t.Fatalf("after %d fails: status %s, want %s", i, st.Status, want)
			}
		}
		if st.StaleBy != "f5" {
			t.Errorf("StaleBy = %q, want f5", st.StaleBy)
		}
		// Stale: evidence ×.25 → α = 3 + .25·2 = 3.5, β = 3 + .25·5 = 4.25.
		sc := m.Score(st, vet, t0)
		near(t, "alpha", sc.Alpha, 3.5)
		near(t, "beta", sc.Beta, 4.25)
		if sc.Trusted() {
			t.Error("a stale QA is in the trusted set")
		}
	})
	t.Run("a pass pulls g down and floors at zero", func(t *testing.T) {
		st := trustedQA(m)
		m.Apply(st, fail("f1", t0), vet)
		m.Apply(st, fail("f2", t0), vet)
		m.Apply(st, pass("p3", t0), vet)
		near(t, "g", st.CUSUM, max(0, 2*lf+math.Log(0.1/0.6))) // 1.6219 − 1.7918 → 0
		m.Apply(st, vote("f3", core.ResultFail, core.StrengthMedium, t0), vet)
		near(t, "g after medium fail", st.CUSUM, 0.5*lf)
	})
	t.Run("a source repeating its verdict moves the CUSUM once", func(t *testing.T) {
		st := trustedQA(m)
		for i := range 20 {
			m.Apply(st, fail("smear", t0.Add(time.Duration(i)*time.Hour)), vet)
		}
		near(t, "g", st.CUSUM, lf)
		// Changing its mind counts again: pass then fail.
		m.Apply(st, vote("smear", core.ResultPass, core.StrengthMedium, t0.Add(day)), vet)
		near(t, "g after pass", st.CUSUM, max(0, lf+0.5*math.Log(0.1/0.6)))
		m.Apply(st, fail("smear", t0.Add(2*day)), vet)
		near(t, "g after fail", st.CUSUM, lf)
		if st.Status != core.StatusActive {
			t.Errorf("status %s, want active", st.Status)
		}
	})
	t.Run("low-weight sources do not move the CUSUM", func(t *testing.T) {
		b := newBook()
		b.src["liar"] = SourceRep{Disagree: 2} // w = 1/6 < .2
		b.src["p1"], b.src["p2"], b.src["p3"] = SourceRep{Agree: 10}, SourceRep{Agree: 10}, SourceRep{Agree: 10}
		st := trustedQA(m)
		m.Apply(st, pass("p3", t0), b) // three passers: a decisive consensus
		for range 10 {
			m.Apply(st, fail("liar", t0), b)
		}
		near(t, "g", st.CUSUM, 0)
		// Disagreeing with p1 and p2 moves half from A 1 D 1 to A 1 D 2: w = .5.
		b.src["half"] = SourceRep{Agree: 1, Disagree: 1}
		m.Apply(st, fail("half", t0), b)
		near(t, "g", st.CUSUM, 0.5*lf)
	})
	stale := func() *State {
		st := trustedQA(m)
		for i := 1; i <= 5; i++ {
			m.Apply(st, fail(fmt.Sprintf("f%d", i), t0), vet)
		}
		return st
	}
	tests := []struct {
		name string
		v    Vote
		want core.Status
	}{
		{"independent pass clears", pass("new", t0), core.StatusActive},
		{"independent fail deprecates", fail("new", t0), core.StatusDeprecated},
		{"the alarm source cannot confirm", vote("f5", core.ResultFail, core.StrengthMedium, t0.Add(30*day)), core.StatusStale},
		{"a repeated verdict is not independent", fail("f1", t0), core.StatusStale},
		{"a passer changing its mind is independent", fail("p1", t0), core.StatusDeprecated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := stale()
			m.Apply(st, tc.v, vet)
			if st.Status != tc.want {
				t.Errorf("status %s, want %s", st.Status, tc.want)
			}
			if tc.want == core.StatusActive && st.CUSUM != 0 {
				t.Errorf("g = %v after clearing, want 0", st.CUSUM)
			}
		})
	}
}

func TestDeprecationAndCreatorRecord(t *testing.T) {
	m := New(DefaultParams())
	t.Run("upper bound below .4 at three units", func(t *testing.T) {
		b := newBook()
		b.cre["bad"] = CreatorRep{Rejected: 8} // Beta(1.4, 4.6)
		st := NewState("bad", t0)
		m.Apply(st, fail("a", t0), b)
		// Two units: upper of Beta(1.4, 6.6) = .3373 < .4, but only 2 units.
		if eff := m.Apply(st, fail("b", t0), b); st.Status != core.StatusCandidate || eff.Creator != (CreatorRep{}) {
			t.Fatalf("after 2 units: status %s effects %+v, want candidate and none", st.Status, eff.Creator)
		}
		eff := m.Apply(st, fail("c", t0), b)
		if st.Status != core.StatusDeprecated {
			t.Fatalf("after 3 units: status %s, want deprecated", st.Status)
		}
		b.add("bad", eff)                                          // the store credits the book; the QA's own rejection stays out of its prior
		near(t, "upper", m.Score(st, b, t0).Upper, 0.302441690504) // Beta(1.4, 7.6)
		if eff.Creator != (CreatorRep{Rejected: 1}) {
			t.Errorf("creator effect %+v, want one rejection", eff.Creator)
		}
		if eff := m.Apply(st, fail("d", t0), b); eff.Creator != (CreatorRep{}) {
			t.Errorf("second deprecation effect %+v, want none", eff.Creator)
		}
	})
	t.Run("new creator needs seven fails", func(t *testing.T) {
		// A fresh creator's candidate: CUSUM alarms at the 5th fail (stale),
		// the 6th independent fail confirms it.
		st := NewState("c", t0)
		for i := 1; i <= 6; i++ {
			m.Apply(st, fail(fmt.Sprintf("f%d", i), t0), NoReputation)
		}
		if st.Status != core.StatusDeprecated {
			t.Errorf("status %s, want deprecated", st.Status)
		}
	})
	t.Run("becoming trusted counts once for the creator", func(t *testing.T) {
		st := NewState("c", t0)
		if eff := m.Apply(st, pass("a", t0), NoReputation); eff.Creator != (CreatorRep{}) {
			t.Fatalf("one pass: %+v, want nothing", eff.Creator)
		}
		if eff := m.Apply(st, pass("b", t0), NoReputation); eff.Creator != (CreatorRep{Proven: 1}) {
			t.Fatalf("two passes: %+v, want proven", eff.Creator)
		}
		if eff := m.Apply(st, pass("c", t0), NoReputation); eff.Creator != (CreatorRep{}) {
			t.Fatalf("three passes: %+v, want nothing more", eff.Creator)
		}
	})
	t.Run("a QA with five passers that goes bad does not count against", func(t *testing.T) {
		for _, passers := range []int{4, 5} {
			st := NewState("c", t0)
			var rejected float64
			for i := range passers {
				rejected += m.Apply(st, pass(fmt.Sprintf("p%d", i), t0), veterans{}).Creator.Rejected
			}
			for i := range 7 {
				rejected += m.Apply(st, fail(fmt.Sprintf("f%d", i), t0.Add(day)), veterans{}).Creator.Rejected
			}
			if st.Status != core.StatusDeprecated {
				t.Fatalf("%d passers: status %s, want deprecated", passers, st.Status)
			}
			want := 1.0
			if passers >= 5 {
				want = 0
			}
			if rejected != want || st.PeakPassers != passers {
				t.Errorf("%d passers: rejected %v peak %d, want %v and %d", passers, rejected, st.PeakPassers, want, passers)
			}
		}
	})
}

func TestAgreement(t *testing.T) {
	m := New(DefaultParams())
	t.Run("scored against the others once they have two decisive units", func(t *testing.T) {
		st := NewState("creator", t0)
		steps := []struct {
			v    Vote
			want map[string]SourceRep
		}{
			{pass("a", t0), nil},
			{pass("b", t0), nil}, // others: one unit
			// Others a, b: Beta(3,1), lower bound .502 > .5: pass.
			{fail("c", t0), map[string]SourceRep{"c": {Disagree: 1}}},
			// For a: b pass, c fail, d pass → Beta(3,2), lower .34: undecided,
			// and likewise for d; nobody's credit changes.
			{pass("d", t0), nil},
			// e: a, b, d pass, c fails → Beta(4,2), lower .47: undecided; a:
			// b, d, e pass vs c → same. Nobody is scored.
			{pass("e", t0), nil},
			// f: Beta(5,2), lower .55: pass. a, b, d, e now see four passes
			// and one fail (Beta(5,2)) too.
			{pass("f", t0), map[string]SourceRep{"a": {Agree: 1}, "b": {Agree: 1}, "d": {Agree: 1}, "e": {Agree: 1}, "f": {Agree: 1}}},
			{pass("f", t0), nil}, // repeating a vote earns nothing
			{vote("g", core.ResultPass, core.StrengthWeak, t0), map[string]SourceRep{"g": {Agree: 0.2}}},
		}
		for i, s := range steps {
			eff := m.Apply(st, s.v, NoReputation)
			if !reflect.DeepEqual(eff.Sources, s.want) {
				t.Fatalf("step %d (%s): effects %v, want %v", i, s.v.Source, eff.Sources, s.want)
			}
		}
	})
	t.Run("decisive consensus", func(t *testing.T) {
		tests := []struct {
			s, f float64
			want int
		}{
			{2, 0, 1},   // Beta(3,1): lower .502
			{1, 0, 0},   // Beta(2,1): lower .365
			{0, 2, -1},  // Beta(1,3): upper .498
			{2, 1, 0},   // Beta(3,2)
			{17, 3, 1},  // a good QA with some failing runs
			{0, 1, 0},   // one trusted fail is not decisive
			{10, 10, 0}, // split
		}
		for _, tc := range tests {
			if got := m.decisive(tc.s, tc.f); got != tc.want {
				t.Errorf("decisive(%v, %v) = %d, want %d", tc.s, tc.f, got, tc.want)
			}
		}
	})
	t.Run("one unit of anchor evidence re-scores the colluders", func(t *testing.T) {
		st := NewState("creator", t0)
		for _, id := range []string{"x", "y", "z"} {
			m.Apply(st, pass(id, t0), NoReputation)
		}
		// x, y, z agree with each other (Beta(3,1) each): credited once.
		for _, id := range []string{"x", "y", "z"} {
			if e := st.Sources[id]; e.CA != 1 {
				t.Fatalf("%s credited %v agreement, want 1", id, e.CA)
			}
		}
		v := vote("ci1", core.ResultFail, core.StrengthMedium, t0)
		v.Trusted = true
		if eff := m.Apply(st, v, NoReputation); eff.Sources != nil {
			t.Fatalf("half a unit of anchor evidence re-scored %v", eff.Sources)
		}
		v.Source = "ci2"
		eff := m.Apply(st, v, NoReputation)
		want := map[string]SourceRep{"x": {Agree: -1, Disagree: 1}, "y": {Agree: -1, Disagree: 1}, "z": {Agree: -1, Disagree: 1}}
		if !reflect.DeepEqual(eff.Sources, want) {
			t.Errorf("effects %v, want %v", eff.Sources, want)
		}
	})
	t.Run("a trusted source in the book anchors too", func(t *testing.T) {
		b := newBook()
		b.src["ci"] = SourceRep{Trusted: true, Disagree: 50}
		st := NewState("creator", t0)
		m.Apply(st, fail("ci", t0), b)
		eff := m.Apply(st, pass("x", t0), b)
		if !reflect.DeepEqual(eff.Sources, map[string]SourceRep{"x": {Disagree: 1}}) {
			t.Errorf("effects %v, want x disagrees", eff.Sources)
		}
		near(t, "beta (trusted weighs 1)", m.Score(st, b, t0).Beta, 4)
	})
	t.Run("colluders are held by an anchor", func(t *testing.T) {
		b := newBook()
		creator := "adv"
		poisoned := NewState(creator, t0)
		for i := range 10 {
			b.add(creator, m.Apply(poisoned, pass(fmt.Sprintf("c%d", i), t0), b))
		}
		if !m.Score(poisoned, b, t0).Trusted() {
			t.Fatal("ten forged passes do not make the poisoned QA trusted; the test is moot")
		}
		v := fail("ci", t0.Add(day))
		v.Trusted = true
		b.add(creator, m.Apply(poisoned, v, b))
		for i := range 10 {
			near(t, "colluder weight (A 0, D 1)", b.Source(fmt.Sprintf("c%d", i)).Weight(), 0.5)
		}
		// The QA was trusted once and credited its creator, but its own
		// credit stays out of its own prior: Beta(3, 3); the colluders'
		// weight halves.
		if b.Creator(creator).Proven != 1 {
			t.Fatalf("creator not credited: %+v", b.Creator(creator))
		}
		sc := m.Score(poisoned, b, t0.Add(day))
		near(t, "alpha", sc.Alpha, 3+10*0.5*math.Exp2(-1.0/90))
		near(t, "beta", sc.Beta, 3+1)
	})
}

func TestSetStatusAndExpire(t *testing.T) {
	m := New(DefaultParams())
	t.Run("human statuses are sticky", func(t *testing.T) {
		for _, s := range []core.Status{core.StatusVerified, core.StatusDeprecated} {
			st := trustedQA(m)
			m.SetStatus(st, s, t0)
			if !st.HumanLocked {
				t.Fatalf("%s: not locked", s)
			}
			for i := range 10 {
				m.Apply(st, fail(fmt.Sprintf("f%d", i), t0), NoReputation)
			}
			if st.Status != s {
				t.Errorf("%s changed to %s by automatic rules", s, st.Status)
			}
			if m.Expire(st, t0.Add(365*day)) {
				t.Errorf("%s expired", s)
			}
			m.SetStatus(st, core.StatusActive, t0)
			if st.HumanLocked || st.CUSUM != 0 {
				t.Errorf("human active: locked %v g %v, want unlocked and 0", st.HumanLocked, st.CUSUM)
			}
		}
	})
	t.Run("verdict effects on the creator", func(t *testing.T) {
		st := NewState("c", t0)
		if eff := m.SetStatusEffects(st, core.StatusVerified, t0); eff.Creator != (CreatorRep{Proven: 1}) {
			t.Errorf("verified: %+v", eff.Creator)
		}
		if eff := m.SetStatusEffects(st, core.StatusVerified, t0); eff.Creator != (CreatorRep{}) {
			t.Errorf("verified twice: %+v", eff.Creator)
		}
		if eff := m.SetStatusEffects(NewState("c", t0), core.StatusDeprecated, t0); eff.Creator != (CreatorRep{Rejected: 1}) {
			t.Errorf("deprecated: %+v", eff.Creator)
		}
	})
	tests := []struct {
		name  string
		setup func(*State)
		at    time.Time
		want  bool
	}{
		{"young candidate", func(*State) {}, t0.Add(29 * day), false},
		{"candidate at the TTL", func(*State) {}, t0.Add(30 * day), true},
		{"only fails", func(st *State) { m.Apply(st, fail("a", t0), NoReputation) }, t0.Add(31 * day), true},
		{"validated once", func(st *State) { m.Apply(st, pass("a", t0), NoReputation) }, t0.Add(1000 * day), false},
		{"trusted never by age", func(st *State) { *st = *trustedQA(m) }, t0.Add(1000 * day), false},
		{"frozen", func(st *State) { m.SetStatus(st, core.StatusFrozen, t0) }, t0.Add(31 * day), false},
		{"already deprecated", func(st *State) { st.Status = core.StatusDeprecated }, t0.Add(31 * day), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState("creator", t0)
			tc.setup(st)
			before := st.Status
			got := m.Expire(st, tc.at)
			if got != tc.want {
				t.Fatalf("Expire = %v, want %v", got, tc.want)
			}
			if got && st.Status != core.StatusDeprecated || !got && st.Status != before {
				t.Errorf("status %s after Expire=%v", st.Status, got)
			}
		})
	}
	t.Run("frozen takes no automatic change", func(t *testing.T) {
		st := trustedQA(m)
		m.SetStatus(st, core.StatusFrozen, t0)
		if eff := m.Apply(st, fail("x", t0), NoReputation); eff.Counted {
			t.Error("a vote on a frozen QA counted")
		}
	})
}

// busyState is a QA with three reports from each of n sources, spread over
// time.
func busyState(m *Model, b *book, n int) *State {
	st := NewState("creator", t0)
	for i := range 3 * n {
		at := t0.Add(time.Duration(i) * 7 * time.Hour)
		v := vote(fmt.Sprintf("s%02d", i%n), core.ResultPass, core.StrengthMedium, at)
		if i%4 == 3 {
			v.Result, v.Strength = core.ResultFail, core.StrengthWeak
		}
		v.Trusted = i%17 == 5
		b.add("creator", m.Apply(st, v, b))
	}
	return st
}

func TestStateJSONRoundTrip(t *testing.T) {
	m := New(DefaultParams())
	b := newBook()
	st := busyState(m, b, 20)
	m.SetStatus(st, core.StatusVerified, t0.Add(30*day))
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, &back) {
		t.Errorf("state differs after a JSON round trip:\n%+v\n%+v", st, &back)
	}
	raw2, _ := json.Marshal(&back)
	if string(raw) != string(raw2) {
		t.Errorf("JSON differs:\n%s\n%s", raw, raw2)
	}
	now := t0.Add(40 * day)
	if a, c := m.Score(st, b, now), m.Score(&back, b, now); a != c {
		t.Errorf("scores differ: %+v vs %+v", a, c)
	}
	// A local time with a monotonic reading is stored as UTC.
	st2 := NewState("c", time.Now())
	m.Apply(st2, pass("a", time.Now()), NoReputation)
	raw, _ = json.Marshal(st2)
	var back2 State
	if err := json.Unmarshal(raw, &back2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st2, &back2) {
		t.Errorf("state with wall-clock times differs after a round trip:\n%+v\n%+v", st2, &back2)
	}
}

func TestDeterministic(t *testing.T) {
	m := New(DefaultParams())
	b1, b2 := newBook(), newBook()
	s1, s2 := busyState(m, b1, 27), busyState(m, b2, 27)
	now := t0.Add(50 * day)
	want := m.Score(s1, b1, now)
	for range 50 { // map iteration order changes between calls
		if got := m.Score(s2, b2, now); got != want {
			t.Fatalf("Score not deterministic: %+v vs %+v", got, want)
		}
	}
	if !reflect.DeepEqual(b1, b2) {
		t.Error("reputation books differ for the same votes")
	}
}

func TestNewFillsDefaults(t *testing.T) {
	got := New(Params{CountCreator: true}).Params()
	want := DefaultParams()
	want.CountCreator = true
	if got != want {
		t.Errorf("New(zero) params %+v, want %+v", got, want)
	}
}

func BenchmarkScore(b *testing.B) {
	for _, n := range []int{2, 10, 50} {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) {
			m := New(DefaultParams())
			bk := newBook()
			st := busyState(m, bk, n)
			now := t0.Add(60 * day)
			b.ReportAllocs()
			for b.Loop() {
				m.Score(st, bk, now)
			}
		})
	}
}

func BenchmarkApply(b *testing.B) {
	for _, n := range []int{2, 10, 50} {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) {
			m := New(DefaultParams())
			bk := newBook()
			st := busyState(m, bk, n)
			at := t0.Add(60 * day)
			v := pass("s03", at)
			b.ReportAllocs()
			for b.Loop() {
				m.Apply(st, v, bk)
			}
		})
	}
}

// bookRep is a Reputation backed by maps, as a store keeps it.
type bookRep struct {
	src map[string]SourceRep
	cr  map[string]CreatorRep
}

func (b bookRep) Source(id string) SourceRep   { return b.src[id] }
func (b bookRep) Creator(id string) CreatorRep { return b.cr[id] }

// TestOwnCreditNotInOwnPrior: when a QA becomes trusted its creator is
// credited, but that credit must not raise the same QA's trust (two clean
// independent passes stay ≈ 0.42 once the store applies the effects).
func TestOwnCreditNotInOwnPrior(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := New(DefaultParams())
	book := bookRep{src: map[string]SourceRep{}, cr: map[string]CreatorRep{}}
	st := NewState("creator", now)
	for _, src := range []string{"a", "b"} {
		eff := m.Apply(st, Vote{Source: src, Result: core.ResultPass, Strength: core.StrengthStrong, At: now}, book)
		c := book.cr["creator"]
		c.Proven += eff.Creator.Proven
		c.Rejected += eff.Creator.Rejected
		book.cr["creator"] = c
	}
	if book.cr["creator"].Proven != 1 {
		t.Fatalf("creator not credited: %+v", book.cr["creator"])
	}
	if got := m.Score(st, book, now).Trust; math.Abs(got-0.4182) > 0.001 {
		t.Errorf("trust after two clean passes with the creator credited = %.4f, want 0.4182 (own credit must not feed its own prior)", got)
	}
	// Another QA of the same creator does benefit.
	other := NewState("creator", now)
	if got := m.Score(other, book, now).Trust; got <= 0.2578+0.001 {
		t.Errorf("a proven creator's next QA trust = %.4f, want above the new-creator 0.2578", got)
	}
}

func TestFillAndImportedState(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := New(DefaultParams())
	r := core.Record{QAID: "q", Status: core.StatusActive, ValidationLevel: 2, SuccessCount: 4, FailureCount: 1,
		CreatedAt: now.Add(-48 * time.Hour), UpdatedAt: now, LastValidatedAt: now}
	st := ImportedState(r)
	if len(st.Sources) != 3 || st.LastPass != now {
		t.Fatalf("imported state: %d sources, last pass %v; want 2 passing + 1 failing source at %v", len(st.Sources), st.LastPass, now)
	}
	var out core.Record
	out.CreatedAt = r.CreatedAt
	out.LastValidatedAt = r.LastValidatedAt
	m.Fill(&out, m.Score(st, NoReputation, now))
	if out.ValidationLevel != 2 || out.Level != "L2" || out.Status != core.StatusActive || out.TrustScore <= 0.26 || out.Alpha == 0 {
		t.Errorf("filled record = level %d %s status %s trust %.3f alpha %.2f; want L2 active, trust above a new QA's", out.ValidationLevel, out.Level, out.Status, out.TrustScore, out.Alpha)
	}
	cand := core.Record{Status: core.StatusCandidate, CreatedAt: now}
	m.Fill(&cand, m.Score(NewState("c", now), NoReputation, now))
	if !cand.TTLExpireAt.Equal(now.Add(DefaultParams().CandidateTTL)) {
		t.Errorf("candidate expiry = %v, want created + candidate TTL", cand.TTLExpireAt)
	}
}

// TestSourcesBounded: thousands of distinct sources (every embedded run is
// one) keep at most MaxSources entries, the newest evidence stays, and
// trust still reflects the passes.
func TestSourcesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := DefaultParams()
	p.CountCreator = true // the embedded store's flavour
	m := New(p)
	st := NewState("creator", now)
	m.Apply(st, Vote{Source: "creator", Result: core.ResultPass, Strength: core.StrengthStrong, At: now}, NoReputation)
	for i := range 2000 {
		at := now.Add(time.Duration(i) * time.Minute)
		m.Apply(st, Vote{Source: fmt.Sprintf("run-%d", i), Result: core.ResultPass, Strength: core.StrengthStrong, At: at}, NoReputation)
	}
	if len(st.Sources) > MaxSources {
		t.Fatalf("%d sources kept, want ≤ %d", len(st.Sources), MaxSources)
	}
	if st.Sources["run-1999"] == nil || st.Sources["creator"] == nil {
		t.Error("the newest voter or the creator was pruned")
	}
	if st.Sources["run-0"] != nil {
		t.Error("the oldest source was kept over newer ones")
	}
	if sc := m.Score(st, NoReputation, now.Add(2000*time.Minute)); sc.Trust < 0.9 || sc.Level != MaxLevel {
		t.Errorf("trust %.3f level %d after 2000 clean passes, want ≥ 0.9 and L3", sc.Trust, sc.Level)
	}
}

// TestConsecutiveFailHolds: three strong fails block a QA (consecutive_fail
// 3) and the block holds as time passes; only a report changes it.
func TestConsecutiveFailHolds(t *testing.T) {
	m := New(DefaultParams())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := NewState("c", now)
	for i := range 3 {
		m.Apply(st, Vote{Source: fmt.Sprintf("s%d", i), Result: core.ResultFail, Strength: core.StrengthStrong, At: now}, nil)
	}
	for _, dt := range []time.Duration{0, time.Second, 24 * time.Hour, 60 * 24 * time.Hour} {
		if got := m.Score(st, nil, now.Add(dt)).ConsecutiveFail; got != 3 {
			t.Errorf("consecutive_fail %v after three strong fails = %d, want 3", dt, got)
		}
	}
}
