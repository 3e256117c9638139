// Package trust is memex's trust model (SPEC §5): per-(QA, source) evidence
// with time discount and one vote per source, source weights from agreement,
// a creator prior, a Beta posterior whose 90 % lower bound is the trust
// score, validation levels, freshness, CUSUM change detection and the
// lifecycle (stale, deprecated, expiry). Every store keeps a State per QA and
// a Reputation book, and calls Apply and Score; nothing else computes trust.
//
// The model is pure and deterministic: the same State, votes, Reputation and
// `now` always give the same numbers (sums run in source-id order). docs/TRUST.md
// explains the model and the simulation (package trust/sim) that backs it.
package trust

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

// Model constants (SPEC §5). They are not knobs: the simulation and the
// tests pin them.
const (
	// StaleFactor scales a stale QA's evidence when it is scored.
	StaleFactor = 0.25
	// CUSUMThreshold is the change-detection alarm level.
	CUSUMThreshold = 4.0
	// MinWeight is the source weight a report needs to count for the level,
	// for freshness, for consecutive_fail and for the stale/clear rules.
	MinWeight = 0.2
	// MinLevelPass is the discounted pass amount a source needs to count for
	// the validation level.
	MinLevelPass = 0.25
	// MaxLevel caps the validation level on the wire.
	MaxLevel = 3
	// ConsensusUnits is how much evidence from others a QA needs before a
	// source's vote on it is scored for agreement (without trusted anchors).
	ConsensusUnits = 2.0
	// AnchorUnits is how much evidence trusted anchors need on a QA before
	// agreement is scored against their majority (one strong report).
	AnchorUnits = 1.0
	// DeprecateUnits and DeprecateUpper: a QA with at least DeprecateUnits of
	// evidence whose upper bound is below DeprecateUpper is deprecated.
	DeprecateUnits = 3.0
	DeprecateUpper = 0.4
	// ResilientPassers: a deprecated QA that once had this many passers went
	// stale rather than being bad, and does not count against its creator.
	ResilientPassers = 5
	// TrustedLevel and TrustedTrust define the trusted set (SPEC §5.4) for
	// the creator record: a QA that reaches it counts for its creator.
	TrustedLevel = 2
	TrustedTrust = 0.4
	// minNewEvidence is the new evidence a vote must add to be independent
	// for the stale rules (a source repeating its verdict is not).
	minNewEvidence = 0.1
)

var (
	llrPass = math.Log(0.1 / 0.6) // ℓ(pass): ≈ −1.792
	llrFail = math.Log(0.9 / 0.4) // ℓ(fail): ≈ +0.811
)

// Params are the model's knobs.
type Params struct {
	HalfLife     time.Duration // evidence discount half-life (90 days)
	Z            float64       // lower-bound z (1.2816, 90 % one-sided)
	CandidateTTL time.Duration // a QA never validated within it expires (30 days)
	// CountCreator counts the creator's own reports for its QA: true in the
	// embedded store (the creating run's --verify pass is evidence), false in
	// the service.
	CountCreator bool
}

// DefaultParams are SPEC §5's defaults (service flavour: CountCreator false).
func DefaultParams() Params {
	return Params{HalfLife: 90 * 24 * time.Hour, Z: 1.2816, CandidateTTL: 30 * 24 * time.Hour}
}

// Model computes trust. It is pure and safe for concurrent use.
type Model struct{ p Params }

// New returns a model. Zero HalfLife, Z or CandidateTTL take the defaults.
func New(p Params) *Model {
	d := DefaultParams()
	if p.HalfLife <= 0 {
		p.HalfLife = d.HalfLife
	}
	if p.Z <= 0 {
		p.Z = d.Z
	}
	if p.CandidateTTL <= 0 {
		p.CandidateTTL = d.CandidateTTL
	}
	return &Model{p: p}
}

// Params returns the model's parameters.
func (m *Model) Params() Params { return m.p }

// Vote is one validation report.
type Vote struct {
	Source   string
	Result   core.Result
	Strength core.Strength
	At       time.Time
	Human    bool // a human verdict (strong, may change sticky statuses)
	Trusted  bool // the source is an operator-trusted anchor (CI)
}

// SourceEvidence is one source's discounted evidence about one QA.
type SourceEvidence struct {
	S float64   `json:"s"`
	F float64   `json:"f"`
	T time.Time `json:"t"`
	// Anchor: the source reported as a trusted source or a human; it weighs 1
	// and its evidence is the consensus others are scored against.
	Anchor bool `json:"anchor,omitempty"`
	// CA and CD are the agreement and disagreement this source's current
	// stance on this QA has been credited with in the Reputation book; Apply
	// emits the difference when the stance or the consensus changes, so each
	// source counts once per QA however often it reports.
	CA float64 `json:"ca,omitempty"`
	CD float64 `json:"cd,omitempty"`
	// LastFail: the source's latest report was a fail; N is that report's
	// sequence number in the QA (State.Seq).
	LastFail bool   `json:"last_fail,omitempty"`
	N        uint64 `json:"n,omitempty"`
}

// State is one QA's evidence and lifecycle; stores persist it as JSON.
type State struct {
	Creator   string                     `json:"creator,omitempty"`
	CreatedAt time.Time                  `json:"created_at"`
	Sources   map[string]*SourceEvidence `json:"sources,omitempty"`
	Status    core.Status                `json:"status"`
	// HumanLocked: Status was set by a human and is sticky.
	HumanLocked bool      `json:"human_locked,omitempty"`
	CUSUM       float64   `json:"cusum,omitempty"`
	LastPass    time.Time `json:"last_pass,omitzero"`
	// ConsecutiveFail is the wire's consecutive_fail as of the last vote: the
	// fails since the last counted pass, one vote per source, in units of
	// evidence — Σ w·F over sources (weight ≥ MinWeight, not disagreeing
	// with the QA's consensus) whose latest report is a fail after that pass,
	// rounded down (a strong fail counts 1, a medium ½, a weak ⅕). Score
	// recomputes it with current weights. A fail the consensus contradicts
	// does not count: the gatekeeper blocks at 3 and a blocked QA is never
	// shown again, so noise or a smear must not be able to block a QA the
	// evidence says works.
	ConsecutiveFail int `json:"consecutive_fail,omitempty"`
	// Seq counts the counted votes; PassSeq is Seq at the last counted pass.
	Seq     uint64 `json:"seq,omitempty"`
	PassSeq uint64 `json:"pass_seq,omitempty"`
	// StaleBy is the source whose report raised the CUSUM alarm; its later
	// reports are not independent evidence for the stale rules.
	StaleBy string `json:"stale_by,omitempty"`
	// PeakPassers is the most distinct weighted passers the QA ever had.
	PeakPassers int `json:"peak_passers,omitempty"`
	// Proven and Rejected record that the creator's book was credited (the
	// QA became trusted) or debited (it was deprecated), so each happens once.
	Proven   bool `json:"proven,omitempty"`
	Rejected bool `json:"rejected,omitempty"`
}

// NewState returns the state of a new candidate created by creator.
func NewState(creator string, now time.Time) *State {
	return &State{Creator: creator, CreatedAt: now.UTC(), Status: core.StatusCandidate, Sources: map[string]*SourceEvidence{}}
}

// SourceRep is a source's agreement record across QAs.
type SourceRep struct {
	Agree    float64 `json:"a"`
	Disagree float64 `json:"d"`
	Trusted  bool    `json:"trusted,omitempty"`
}

// Weight is the source's weight: 1 for a trusted source, else
// clamp((r − 0.35)/0.30, 0, 1) with r = (A+2)/(A+D+3). A new source weighs 1.
func (r SourceRep) Weight() float64 {
	if r.Trusted {
		return 1
	}
	agree := (r.Agree + 2) / (r.Agree + r.Disagree + 3)
	return min(max((agree-0.35)/0.30, 0), 1)
}

// CreatorRep is a creator's record: QAs that became trusted vs deprecated.
type CreatorRep struct {
	Proven   float64 `json:"proven"`
	Rejected float64 `json:"rejected"`
}

// Prior is the Beta prior of a QA by this creator: c = (proven+1)/(proven+
// rejected+2), α₀ = 1+4c, β₀ = 1+4(1−c). A new creator gives Beta(3,3).
func (r CreatorRep) Prior() (alpha0, beta0 float64) {
	c := (r.Proven + 1) / (r.Proven + r.Rejected + 2)
	return 1 + 4*c, 1 + 4*(1-c)
}

// Reputation is the cross-QA book a store keeps. A store with no book can
// pass NoReputation.
type Reputation interface {
	Source(id string) SourceRep
	Creator(id string) CreatorRep
}

// NoReputation is an empty book: every source is new, every creator new.
var NoReputation Reputation = noRep{}

type noRep struct{}

func (noRep) Source(string) SourceRep   { return SourceRep{} }
func (noRep) Creator(string) CreatorRep { return CreatorRep{} }

// Effects is what Apply asks the store to add to its Reputation book, in the
// same atomic update as the new State. Increments may be negative (a stance
// credited as agreement that now disagrees moves from Agree to Disagree).
type Effects struct {
	// Counted is false when the vote carried no weight (e.g. the creator's
	// own vote where CountCreator is off, or a frozen QA).
	Counted bool
	// Sources holds agreement increments per source id. It names the voting
	// source and any other source whose stance on this QA was re-scored
	// because the consensus changed. Nil when there is nothing to add.
	Sources map[string]SourceRep
	// Creator holds the increment of the QA creator's record.
	Creator CreatorRep
}

// Scores are the computed view of a State at a time.
type Scores struct {
	Trust           float64
	Mean            float64
	Upper           float64
	Alpha           float64
	Beta            float64
	Freshness       float64
	Level           int
	Status          core.Status
	ConsecutiveFail int
	// Units is the weighted, discounted evidence in the posterior
	// (α+β−α₀−β₀); Passers the distinct weighted net passers (uncapped).
	Units   float64
	Passers int
	// ExpireAt is when the expiry job deprecates the QA (Expire): its
	// creation plus the candidate TTL, for a candidate with no counted pass;
	// zero when it never expires by age.
	ExpireAt time.Time
}

// Trusted reports whether the scores put the QA in the trusted set of SPEC
// §5.4 at the default thresholds (level ≥ 2, trust ≥ 0.4, not stale or
// deprecated).
func (s Scores) Trusted() bool {
	return s.Level >= TrustedLevel && s.Trust >= TrustedTrust &&
		s.Status != core.StatusStale && s.Status != core.StatusDeprecated
}

// Decay is d(Δt) = 2^(−Δt/half_life); Δt < 0 counts as 0.
func (m *Model) Decay(dt time.Duration) float64 {
	if dt <= 0 {
		return 1
	}
	return math.Exp2(-float64(dt) / float64(m.p.HalfLife))
}

// weight is a source's weight on this QA and whether it is an anchor (a
// trusted source or a human, weighing 1).
func weight(id string, e *SourceEvidence, rep Reputation) (w float64, anchor bool) {
	r := rep.Source(id)
	if e.Anchor || r.Trusted {
		return 1, true
	}
	return r.Weight(), false
}

// counted reports whether source id's evidence counts for st.
func (m *Model) counted(st *State, id string) bool {
	return m.p.CountCreator || id != st.Creator
}

// keys returns the source ids of st in order, for deterministic sums. buf is
// reused when it is large enough.
func keys(st *State, buf []string) []string {
	ks := buf[:0]
	for id := range st.Sources {
		ks = append(ks, id)
	}
	slices.Sort(ks)
	return ks
}

// posterior sums the weighted, discounted evidence at now; factor scales it
// (StaleFactor for a stale QA).
type posterior struct {
	alpha, beta, units, failUnits float64
	level, passers                int
}

// failing is consecutive_fail: the weighted fail units since the last
// counted pass, rounded down (a tiny epsilon absorbs rounding).
func (p posterior) failing() int { return int(math.Floor(p.failUnits + 1e-9)) }

// ownPrior is the creator prior of st's QA over the creator's OTHER QAs:
// the credit this QA itself earned its creator (st.Proven, st.Rejected) is
// taken out, so becoming trusted does not raise the QA's own trust.
func ownPrior(st *State, rep Reputation) (alpha0, beta0 float64) {
	cr := rep.Creator(st.Creator)
	if st.Proven {
		cr.Proven = max(0, cr.Proven-1)
	}
	if st.Rejected {
		cr.Rejected = max(0, cr.Rejected-1)
	}
	return cr.Prior()
}

func (m *Model) posterior(st *State, rep Reputation, now time.Time, factor float64) posterior {
	a0, b0 := ownPrior(st, rep)
	p := posterior{alpha: a0, beta: b0}
	var buf [16]string
	for _, id := range keys(st, buf[:]) {
		e := st.Sources[id]
		if e == nil || !m.counted(st, id) {
			continue
		}
		w, _ := weight(id, e, rep)
		d := m.Decay(now.Sub(e.T))
		p.alpha += w * e.S * d * factor
		p.beta += w * e.F * d * factor
		if w < MinWeight {
			continue
		}
		if e.S > e.F {
			p.passers++
			if e.S*d >= MinLevelPass {
				p.level++
			}
		}
		if e.LastFail && e.N > st.PassSeq && e.CD == 0 {
			// Not discounted by the clock: the fails since the last pass stay
			// what they were until a report changes them (a block that read 3
			// at the vote must not read 2 a second later).
			p.failUnits += w * e.F
		}
	}
	p.units = p.alpha + p.beta - a0 - b0
	return p
}

// bounds returns the mean and the lower and upper z-bounds of Beta(α, β).
func (m *Model) bounds(alpha, beta float64) (mean, lower, upper float64) {
	mean = alpha / (alpha + beta)
	sd := math.Sqrt(mean * (1 - mean) / (alpha + beta + 1))
	return mean, mean - m.p.Z*sd, mean + m.p.Z*sd
}

// Score computes trust, level, freshness and status at now: the posterior
// α = α₀ + Σ w·S·d, β = β₀ + Σ w·F·d over counted sources (×0.25 when
// stale), trust = m − z·sd, level = distinct weighted sources with a net
// current pass (capped at 3), freshness = d(now − last counted pass).
func (m *Model) Score(st *State, rep Reputation, now time.Time) Scores {
	if rep == nil {
		rep = NoReputation
	}
	factor := 1.0
	if st.Status == core.StatusStale {
		factor = StaleFactor
	}
	p := m.posterior(st, rep, now, factor)
	mean, lower, upper := m.bounds(p.alpha, p.beta)
	fresh := 0.0
	if !st.LastPass.IsZero() {
		fresh = m.Decay(now.Sub(st.LastPass))
	}
	var expire time.Time
	if st.Status == core.StatusCandidate && automatic(st) && st.LastPass.IsZero() && m.p.CandidateTTL > 0 {
		expire = st.CreatedAt.Add(m.p.CandidateTTL)
	}
	return Scores{
		ExpireAt:        expire,
		Trust:           max(lower, 0),
		Mean:            mean,
		Upper:           min(upper, 1),
		Alpha:           p.alpha,
		Beta:            p.beta,
		Freshness:       fresh,
		Level:           min(p.level, MaxLevel),
		Status:          st.Status,
		ConsecutiveFail: p.failing(),
		Units:           p.units,
		Passers:         p.passers,
	}
}

// automatic reports whether the model may change st's status on its own.
func automatic(st *State) bool {
	return !st.HumanLocked && st.Status != core.StatusFrozen
}

// Apply records v in st (mutating it) and returns the reputation effects the
// store must add to its book in the same atomic update.
//
// A frozen QA ignores every vote; the creator's own vote is ignored unless
// Params.CountCreator. Otherwise, in order: the source's evidence is
// discounted to v.At, the vote's weight (its strength; a human vote is
// strong) is added and the source is capped at one unit; every non-anchor
// source's stance on the QA is re-scored against the consensus (Effects.Sources
// holds the changes, and the rest of the update already sees them); the last
// pass and the CUSUM are updated (a source's report moves the CUSUM when it is
// its first on the QA or changes its verdict); the status follows (candidate →
// active on the first counted pass; stale on a CUSUM alarm; stale → active on
// an independent pass, → deprecated on an independent fail; deprecated when
// the upper bound falls below 0.4 with ≥ 3 units); consecutive_fail is
// recomputed; and the creator is credited once when the QA becomes trusted,
// debited once when it is deprecated (unless it once had ≥ 5 passers).
// Human-locked statuses are sticky: evidence is still recorded.
func (m *Model) Apply(st *State, v Vote, rep Reputation) Effects {
	if rep == nil {
		rep = NoReputation
	}
	if st.Status == core.StatusFrozen || !m.counted(st, v.Source) {
		return Effects{}
	}
	if st.Sources == nil {
		st.Sources = map[string]*SourceEvidence{}
	}
	at := v.At.UTC()
	e := st.Sources[v.Source]
	if e == nil {
		e = &SourceEvidence{}
		st.Sources[v.Source] = e
	}
	e.Anchor = e.Anchor || v.Trusted || v.Human

	// One vote per source: discount, add, cap at one unit.
	amount := v.Strength.Weight()
	if v.Human {
		amount = core.StrengthStrong.Weight()
	}
	pass := v.Result == core.ResultPass
	d := 1.0
	if !e.T.IsZero() {
		d = m.Decay(at.Sub(e.T))
	}
	s0, f0 := e.S*d, e.F*d
	s, f := s0, f0
	if pass {
		s += amount
	} else {
		f += amount
	}
	if s+f > 1 {
		k := 1 / (s + f)
		s, f = s*k, f*k
	}
	fresh := f - f0 // new evidence this vote added
	if pass {
		fresh = s - s0
	}
	prevFail, reported := e.LastFail, e.N > 0
	e.S, e.F = s, f
	if at.After(e.T) {
		e.T = at
	}
	st.Seq++
	e.LastFail, e.N = !pass, st.Seq

	// Score every stance on the QA against the consensus first, so the rest
	// of the update already sees this vote's agreement in the source's weight.
	eff := Effects{Counted: true, Sources: m.rescore(st, rep, at)}
	book := overlay{rep, eff.Sources}
	w, _ := weight(v.Source, e, book)
	if pass && w >= MinWeight {
		st.PassSeq = st.Seq
		if at.After(st.LastPass) {
			st.LastPass = at
		}
	}

	// Change detection over used outcomes: a source's report moves the CUSUM
	// by weight × strength × ℓ when it is the source's first on this QA or
	// changes its verdict (repeating a verdict is not a new observation).
	if w >= MinWeight && (!reported || prevFail == pass) {
		llr := llrFail
		if pass {
			llr = llrPass
		}
		st.CUSUM = max(0, st.CUSUM+w*amount*llr)
	}
	independent := w >= MinWeight && fresh >= minNewEvidence && v.Source != st.StaleBy
	if automatic(st) {
		switch {
		case st.Status == core.StatusStale && independent && pass:
			st.Status, st.CUSUM, st.StaleBy = core.StatusActive, 0, ""
		case st.Status == core.StatusStale && independent:
			st.Status = core.StatusDeprecated
		case st.Status == core.StatusCandidate && pass && w >= MinWeight:
			st.Status = core.StatusActive
		}
		if (st.Status == core.StatusActive || st.Status == core.StatusCandidate) && st.CUSUM >= CUSUMThreshold {
			st.Status, st.StaleBy = core.StatusStale, v.Source
		}
	}
	p := m.posterior(st, book, at, 1)
	st.PeakPassers = max(st.PeakPassers, p.passers)
	st.ConsecutiveFail = p.failing()
	if automatic(st) && st.Status != core.StatusDeprecated && p.units >= DeprecateUnits {
		if _, _, upper := m.bounds(p.alpha, p.beta); upper < DeprecateUpper {
			st.Status = core.StatusDeprecated
		}
	}

	// Creator record.
	if st.Status == core.StatusDeprecated && !st.Rejected && st.PeakPassers < ResilientPassers {
		st.Rejected = true
		eff.Creator.Rejected = 1
	}
	if !st.Proven && m.Score(st, book, at).Trusted() {
		st.Proven = true
		eff.Creator.Proven = 1
	}
	m.prune(st, v.Source, at)
	return eff
}

// MaxSources bounds the sources a QA keeps evidence for. On the embedded
// store every run is its own source, so a QA validated by thousands of runs
// would otherwise carry (and rescore) thousands of entries.
const MaxSources = 256

// prune keeps at most MaxSources sources: it drops those whose discounted
// evidence is smallest, never an anchor, the creator or the source that
// just voted. A dropped source's evidence is old or small by construction;
// if it votes again it starts afresh (its earlier vote has decayed anyway).
func (m *Model) prune(st *State, voter string, now time.Time) {
	if len(st.Sources) <= MaxSources {
		return
	}
	type cand struct {
		id string
		w  float64
	}
	cs := make([]cand, 0, len(st.Sources))
	for id, e := range st.Sources {
		if e == nil || e.Anchor || id == voter || id == st.Creator {
			continue
		}
		cs = append(cs, cand{id, (e.S + e.F) * m.Decay(now.Sub(e.T))})
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(a.w, b.w), strings.Compare(a.id, b.id)) })
	for _, c := range cs[:min(len(cs), len(st.Sources)-MaxSources)] {
		delete(st.Sources, c.id)
	}
}

// overlay is a Reputation with this update's agreement increments added.
type overlay struct {
	Reputation
	d map[string]SourceRep
}

func (o overlay) Source(id string) SourceRep {
	r := o.Reputation.Source(id)
	if x, ok := o.d[id]; ok {
		r.Agree += x.Agree
		r.Disagree += x.Disagree
	}
	return r
}

// decisive is the direction of a consensus of s pass and f fail units: +1
// when the z lower bound of Beta(s+1, f+1) is above one half, −1 when the
// upper bound is below, 0 when the evidence does not decide (a QA that works
// four times in five does not make its one failing reporter a liar).
func (m *Model) decisive(s, f float64) int {
	_, lower, upper := m.bounds(s+1, f+1)
	switch {
	case lower > 0.5:
		return 1
	case upper < 0.5:
		return -1
	}
	return 0
}

// rescore scores every non-anchor source's current stance on st against the
// consensus at time at, and returns the change in credited agreement. The
// consensus is the majority of the anchors' (trusted sources' and humans')
// evidence once it reaches AnchorUnits; otherwise the weighted evidence of
// the other sources, once it reaches ConsensusUnits and is decisive. A
// source whose consensus is undecided keeps its credit.
func (m *Model) rescore(st *State, rep Reputation, at time.Time) map[string]SourceRep {
	type item struct {
		id     string
		e      *SourceEvidence
		anchor bool
		ps, fs float64 // weighted, discounted pass and fail evidence
	}
	var buf [16]string
	ids := keys(st, buf[:])
	items := make([]item, 0, len(ids))
	var anchorS, anchorF, allS, allF float64
	for _, id := range ids {
		e := st.Sources[id]
		if e == nil || !m.counted(st, id) {
			continue
		}
		w, anchor := weight(id, e, rep)
		d := m.Decay(at.Sub(e.T))
		it := item{id: id, e: e, anchor: anchor, ps: w * e.S * d, fs: w * e.F * d}
		items = append(items, it)
		allS += it.ps
		allF += it.fs
		if anchor {
			anchorS += it.ps
			anchorF += it.fs
		}
	}
	anchorDir := 0
	if anchorS+anchorF >= AnchorUnits && anchorS != anchorF {
		anchorDir = 1
		if anchorF > anchorS {
			anchorDir = -1
		}
	}
	var out map[string]SourceRep
	for _, it := range items {
		if it.anchor {
			continue
		}
		dir := anchorDir
		if dir == 0 {
			cs, cf := allS-it.ps, allF-it.fs
			if cs+cf < ConsensusUnits {
				continue
			}
			dir = m.decisive(cs, cf)
		}
		stance := it.e.S - it.e.F
		if dir == 0 || stance == 0 {
			continue
		}
		var ta, td float64
		if (dir > 0) == (stance > 0) {
			ta = math.Abs(stance)
		} else {
			td = math.Abs(stance)
		}
		da, dd := ta-it.e.CA, td-it.e.CD
		if da == 0 && dd == 0 {
			continue
		}
		it.e.CA, it.e.CD = ta, td
		if out == nil {
			out = map[string]SourceRep{}
		}
		out[it.id] = SourceRep{Agree: da, Disagree: dd}
	}
	return out
}

// SetStatus applies a human verdict (verified, frozen, deprecated, active)
// and makes it sticky.
func (m *Model) SetStatus(st *State, s core.Status, now time.Time) {
	m.SetStatusEffects(st, s, now)
}

// SetStatusEffects is SetStatus returning the creator-record effects of the
// verdict: verified counts for the creator (once), deprecated against it
// (once, unless the QA once had ≥ 5 passers), and a human who brings a QA
// back (verified or active) takes the deprecation's debit back. Verified,
// frozen and deprecated are sticky until a human changes them; verified
// and active clear the change detector.
func (m *Model) SetStatusEffects(st *State, s core.Status, now time.Time) Effects {
	st.Status = s
	st.HumanLocked = s == core.StatusVerified || s == core.StatusFrozen || s == core.StatusDeprecated
	eff := Effects{Counted: true}
	switch s {
	case core.StatusVerified, core.StatusActive:
		st.CUSUM, st.StaleBy = 0, ""
		if st.Rejected {
			st.Rejected = false
			eff.Creator.Rejected = -1
		}
		if s == core.StatusVerified && !st.Proven {
			st.Proven = true
			eff.Creator.Proven = 1
		}
	case core.StatusDeprecated:
		if !st.Rejected && st.PeakPassers < ResilientPassers {
			st.Rejected = true
			eff.Creator.Rejected = 1
		}
	}
	return eff
}

// Retirable reports whether the model may deprecate st on its own: not a
// human's status, not frozen, not already deprecated.
func (m *Model) Retirable(st *State) bool {
	return automatic(st) && st.Status != core.StatusDeprecated
}

// Retire deprecates st (Retirable) without counting it against its
// creator: the expiry job's verdict on a QA left blocked, not evidence.
func (m *Model) Retire(st *State) {
	if m.Retirable(st) {
		st.Status = core.StatusDeprecated
	}
}

// Expire reports whether a QA in st should be deprecated by the expiry job
// at now, and if so deprecates it: a QA with no counted pass within
// CandidateTTL of its creation. QAs that were ever validated never expire by
// age (freshness and change detection handle ageing); human-locked and frozen
// QAs never expire. Expiry is not evidence against the creator.
func (m *Model) Expire(st *State, now time.Time) bool {
	if !automatic(st) || st.Status == core.StatusDeprecated || !st.LastPass.IsZero() {
		return false
	}
	if now.Sub(st.CreatedAt) < m.p.CandidateTTL {
		return false
	}
	st.Status = core.StatusDeprecated
	return true
}
