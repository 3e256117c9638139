package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
)

// Selection constants of SPEC §3.1 / §5.4.
const (
	maxInject    = 3
	minScore     = 0.2
	blockFailGE  = 3
	minThompson  = 0.4
	minEpsilon   = 0.05
	maxEpsilon   = 0.5
	explorePlace = 1 // the probation item goes second after a trusted one
)

// book is the service's Reputation: per-source agreement, per-creator record.
type book struct {
	src map[string]trust.SourceRep
	cre map[string]trust.CreatorRep
}

func (b *book) Source(id string) trust.SourceRep   { return b.src[id] }
func (b *book) Creator(id string) trust.CreatorRep { return b.cre[id] }

func (b *book) add(creator string, e trust.Effects) {
	for id, d := range e.Sources {
		r := b.src[id]
		r.Agree += d.Agree
		r.Disagree += d.Disagree
		b.src[id] = r
	}
	if e.Creator != (trust.CreatorRep{}) {
		c := b.cre[creator]
		c.Proven += e.Creator.Proven
		c.Rejected += e.Creator.Rejected
		b.cre[creator] = c
	}
}

// memexPolicy is package trust in the service flavour (the creator's own
// reports do not count; CI keys are trusted sources) with SPEC §5.4's
// selection.
type memexPolicy struct {
	w     *world
	m     *trust.Model
	rep   *book
	state map[int]*trust.State
	rng   *rand.Rand
}

func newMemex(w *world, rng *rand.Rand) *memexPolicy {
	p := &memexPolicy{w: w, m: trust.New(trust.DefaultParams()), state: map[int]*trust.State{}, rng: rng,
		rep: &book{src: map[string]trust.SourceRep{}, cre: map[string]trust.CreatorRep{}}}
	for _, id := range w.ci {
		p.rep.src[id] = trust.SourceRep{Trusted: true}
	}
	return p
}

func (p *memexPolicy) add(x *qa, now time.Time) {
	created := now
	if x.born <= 0 {
		created = p.w.at(x.born)
	}
	st := trust.NewState(x.creator, created)
	p.state[x.id] = st
	for _, h := range x.history {
		p.apply(x, st, h)
	}
}

func (p *memexPolicy) apply(x *qa, st *trust.State, rp report) {
	res := core.ResultFail
	if rp.pass {
		res = core.ResultPass
	}
	eff := p.m.Apply(st, trust.Vote{Source: rp.source, Result: res, Strength: rp.strength, At: rp.at, Trusted: rp.trusted}, p.rep)
	p.rep.add(x.creator, eff)
}

func (p *memexPolicy) report(id int, rp report) { p.apply(p.w.qas[id], p.state[id], rp) }

func (p *memexPolicy) hit(int, bool, time.Time) {} // hits never change trust

func (p *memexPolicy) visible(id int) bool { return p.state[id].Status != core.StatusDeprecated }

// trusted reports whether id is in the trusted set and usable (not blocked
// by consecutive fails).
func (p *memexPolicy) trusted(id int, now time.Time) bool {
	sc := p.m.Score(p.state[id], p.rep, now)
	return sc.Trusted() && (sc.ConsecutiveFail < blockFailGE || sc.Status == core.StatusVerified)
}

func (p *memexPolicy) daily(now time.Time) {
	for _, x := range p.w.qas {
		if st := p.state[x.id]; st != nil {
			p.m.Expire(st, now)
		}
	}
}

// choose is SPEC §5.4: the trusted set by trust × relevance (up to
// maxInject), plus one probation QA drawn by Thompson sampling.
func (p *memexPolicy) choose(ms []match, now time.Time) []int {
	type cand struct {
		id  int
		rel float64
		sc  trust.Scores
	}
	var trusted, others []cand
	for _, mt := range ms {
		st := p.state[mt.id]
		sc := p.m.Score(st, p.rep, now)
		if sc.Status == core.StatusDeprecated || mt.rel < minScore {
			continue
		}
		blocked := sc.ConsecutiveFail >= blockFailGE && sc.Status != core.StatusVerified
		if blocked && !p.w.cfg.ProbeBlocked {
			continue
		}
		c := cand{mt.id, mt.rel, sc}
		if sc.Trusted() && !blocked {
			trusted = append(trusted, c)
		} else {
			others = append(others, c)
		}
	}
	born := func(id int) int { return p.w.qas[id].born }
	slices.SortFunc(trusted, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.sc.Trust*b.rel, a.sc.Trust*a.rel), cmp.Compare(born(b.id), born(a.id)), cmp.Compare(a.id, b.id))
	})
	if len(trusted) > maxInject {
		others = append(others, trusted[maxInject:]...) // not shown this time; may still explore
		trusted = trusted[:maxInject]
	}
	out := make([]int, 0, maxInject+1)
	for _, c := range trusted {
		out = append(out, c.id)
	}
	// Probation: θ ~ Beta(α, β) for every other usable candidate (the draws
	// happen in a fixed order so the random stream is reproducible).
	slices.SortFunc(others, func(a, b cand) int { return a.id - b.id })
	best, bestKey := -1, 0.0
	for _, c := range others {
		theta := betaDraw(p.rng, c.sc.Alpha, c.sc.Beta)
		if theta < minThompson {
			continue
		}
		if k := theta * c.rel; best < 0 || k > bestKey {
			best, bestKey = c.id, k
		}
	}
	if best < 0 {
		return out
	}
	if len(out) == maxInject {
		eps := min(max(0.5*(1-trusted[0].sc.Trust), minEpsilon), maxEpsilon)
		if p.rng.Float64() >= eps {
			return out
		}
		out = out[:maxInject-1]
	}
	pos := min(explorePlace, len(out))
	return slices.Insert(out, pos, best)
}

// betaDraw draws from Beta(a, b) as X/(X+Y) with X ~ Gamma(a), Y ~ Gamma(b).
func betaDraw(r *rand.Rand, a, b float64) float64 {
	x, y := gammaDraw(r, a), gammaDraw(r, b)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaDraw draws from Gamma(k, 1) (Marsaglia and Tsang 2000; k < 1 by the
// boost Gamma(k) = Gamma(k+1)·U^(1/k)).
func gammaDraw(r *rand.Rand, k float64) float64 {
	if k <= 0 {
		return 0
	}
	if k < 1 {
		return gammaDraw(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
