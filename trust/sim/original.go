package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/memex-dev/memex/core"
)

// linear is one QA under the original service's rules (ORIGINAL.md §2).
type linear struct {
	sp, sf, mp, mf, wp, wf     int // passes and fails by strength
	cf                         int // consecutive fails
	status                     core.Status
	level                      int
	trust                      float64
	ttl                        time.Time
	created, lastUsed, lastVal time.Time
}

// score recomputes trust and level (ORIGINAL.md §2.3 steps 7–8).
func (l *linear) score() {
	s := 0.25*float64(l.sp) - 0.35*float64(l.sf) + 0.10*float64(l.mp) - 0.15*float64(l.mf) +
		0.02*float64(l.wp) - 0.05*float64(l.wf) - 0.5*float64(min(l.cf, 3))
	s = min(max(s, -2), 3)
	l.trust = (s + 2) / 5
	total := l.sp + l.sf + l.mp + l.mf + l.wp + l.wf
	switch {
	case l.cf >= 3:
		l.level = 0
	case total >= 6 && l.trust >= 0.80 && l.sp >= 2 && l.sf == 0:
		l.level = 3
	case total >= 4 && l.trust >= 0.65 && l.sp >= 1:
		l.level = 2
	case total >= 2 && l.trust >= 0.40:
		l.level = 1
	default:
		l.level = 0
	}
}

// freshness is the original's linear 30-day decay from the first non-null of
// last used, last validated, created (ORIGINAL.md §2.5).
func (l *linear) freshness(now time.Time) float64 {
	from := l.created
	switch {
	case !l.lastUsed.IsZero():
		from = l.lastUsed
	case !l.lastVal.IsZero():
		from = l.lastVal
	}
	return max(0, 1-now.Sub(from).Hours()/24/30)
}

// originalPolicy is the original linear rule with level-first selection and
// no exploration.
type originalPolicy struct {
	w     *world
	state map[int]*linear
}

func newOriginal(w *world) *originalPolicy { return &originalPolicy{w: w, state: map[int]*linear{}} }

func (p *originalPolicy) add(x *qa, now time.Time) {
	created := now
	if x.born <= 0 {
		created = p.w.at(x.born)
	}
	l := &linear{status: core.StatusCandidate, created: created, ttl: created.Add(14 * 24 * time.Hour)}
	l.score()
	p.state[x.id] = l
	for _, h := range x.history {
		p.apply(l, h)
	}
}

// apply is record_validation (ORIGINAL.md §2.3).
func (p *originalPolicy) apply(l *linear, rp report) {
	now := rp.at
	l.lastVal = now
	if !rp.pass && rp.strength == core.StrengthWeak && l.sp >= 2 && l.sp > l.sf {
		return // the ignore rule
	}
	switch {
	case rp.pass && rp.strength == core.StrengthStrong:
		l.sp++
	case rp.pass && rp.strength == core.StrengthMedium:
		l.mp++
	case rp.pass:
		l.wp++
	case rp.strength == core.StrengthStrong:
		l.sf++
	case rp.strength == core.StrengthMedium:
		l.mf++
	default:
		l.wf++
	}
	if rp.pass {
		l.cf = 0
	} else {
		l.cf++
	}
	l.score()
	switch {
	case rp.pass:
		l.status = core.StatusActive
	case l.cf >= 3:
		l.status = core.StatusDeprecated
	case l.cf >= 2:
		l.status = core.StatusStale
	}
	if rp.strength == core.StrengthStrong {
		if rp.pass {
			l.ttl = later(l.ttl, now).Add(30 * 24 * time.Hour)
			if limit := now.Add(180 * 24 * time.Hour); l.ttl.After(limit) {
				l.ttl = limit
			}
		} else {
			l.ttl = now.Add(7 * 24 * time.Hour)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (p *originalPolicy) report(id int, rp report) { p.apply(p.state[id], rp) }

func (p *originalPolicy) hit(id int, used bool, now time.Time) {
	if used {
		p.state[id].lastUsed = now
	}
}

func (p *originalPolicy) visible(id int) bool { return p.state[id].status != core.StatusDeprecated }

// usable is the client filter (ORIGINAL.md §1.2: active statuses, freshness
// ≥ 0.001; the consecutive-fail filter never fires against the real server).
func (p *originalPolicy) usable(l *linear, now time.Time) bool {
	return (l.status == core.StatusActive || l.status == core.StatusVerified) && l.freshness(now) >= 0.001
}

func (p *originalPolicy) trusted(id int, now time.Time) bool {
	l := p.state[id]
	return p.usable(l, now) && l.level >= 1 && l.trust >= 0.4
}

// daily is the expiry sweep (ORIGINAL.md §2.6).
func (p *originalPolicy) daily(now time.Time) {
	for _, x := range p.w.qas {
		l := p.state[x.id]
		if l == nil || l.status == core.StatusDeprecated || l.ttl.After(now) {
			continue
		}
		if l.status == core.StatusActive {
			l.status, l.ttl = core.StatusStale, now.Add(7*24*time.Hour)
		} else {
			l.status = core.StatusDeprecated
		}
	}
}

// choose is the server's search order (ORIGINAL.md §2.5) followed by the
// client's level-first prepare_inject_list (§1.2).
func (p *originalPolicy) choose(ms []match, now time.Time) []int {
	type cand struct {
		id                      int
		l                       *linear
		score, trust, freshness float64
	}
	var cs []cand
	anyLevel := false
	for _, mt := range ms {
		l := p.state[mt.id]
		if l.status == core.StatusDeprecated {
			continue
		}
		tr := l.trust
		if l.status == core.StatusStale {
			tr *= core.StaleTrustFactor
		}
		f := l.freshness(now)
		cs = append(cs, cand{mt.id, l, core.RankScore(mt.rel, l.trust, f, l.level, l.status), tr, f})
		anyLevel = anyLevel || l.level > 0
	}
	if anyLevel { // the server drops level-0 matches when any is higher
		cs = slices.DeleteFunc(cs, func(c cand) bool { return c.l.level == 0 })
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id)) })
	cs = slices.DeleteFunc(cs, func(c cand) bool { return !p.usable(c.l, now) })
	slices.SortStableFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.l.level, a.l.level), cmp.Compare(b.trust, a.trust), cmp.Compare(b.score, a.score), cmp.Compare(b.freshness, a.freshness))
	})
	var out []int
	hasStrong := false
	for _, c := range cs {
		hasStrong = hasStrong || c.l.level >= 2
		if c.l.level >= 2 && c.trust >= 0.4 && len(out) < maxInject {
			out = append(out, c.id)
		}
	}
	if len(out) == 0 && !hasStrong {
		for _, c := range cs[:min(len(cs), maxInject)] {
			if c.l.level >= 1 && c.trust >= 0.4 {
				return []int{c.id}
			}
		}
	}
	return out
}
