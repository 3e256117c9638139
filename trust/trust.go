// Package trust is memex's trust model (SPEC §5): per-(QA, source) evidence
// with time discount and one vote per source, source weights from agreement,
// a creator prior, a Beta posterior whose 90 % lower bound is the trust
// score, validation levels, freshness, CUSUM change detection and the
// lifecycle (stale, deprecated, expiry). Every store keeps a State per QA and
// a Reputation book, and calls Apply and Score; nothing else computes trust.
package trust

import (
	"time"

	"github.com/memex-dev/memex/core"
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

// New returns a model.
func New(p Params) *Model { return &Model{p: p} }

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
}

// State is one QA's evidence and lifecycle; stores persist it as JSON.
type State struct {
	Creator   string                     `json:"creator,omitempty"`
	CreatedAt time.Time                  `json:"created_at"`
	Sources   map[string]*SourceEvidence `json:"sources,omitempty"`
	Status    core.Status                `json:"status"`
	// HumanLocked: Status was set by a human and is sticky.
	HumanLocked     bool      `json:"human_locked,omitempty"`
	CUSUM           float64   `json:"cusum,omitempty"`
	LastPass        time.Time `json:"last_pass,omitzero"`
	ConsecutiveFail int       `json:"consecutive_fail,omitempty"`
}

// NewState returns the state of a new candidate created by creator.
func NewState(creator string, now time.Time) *State {
	return &State{Creator: creator, CreatedAt: now, Status: core.StatusCandidate, Sources: map[string]*SourceEvidence{}}
}

// SourceRep is a source's agreement record across QAs.
type SourceRep struct {
	Agree    float64 `json:"a"`
	Disagree float64 `json:"d"`
	Trusted  bool    `json:"trusted,omitempty"`
}

// CreatorRep is a creator's record: QAs that became trusted vs deprecated.
type CreatorRep struct {
	Proven   float64 `json:"proven"`
	Rejected float64 `json:"rejected"`
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
// same atomic update as the new State.
type Effects struct {
	// Counted is false when the vote carried no weight (e.g. the creator's
	// own vote where CountCreator is off, or a frozen QA).
	Counted bool
	// Sources holds agreement increments per source id.
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
}

// Apply records v in st (mutating it) and returns the reputation effects.
// PLACEHOLDER implementation: the real model replaces it.
func (m *Model) Apply(st *State, v Vote, rep Reputation) Effects {
	if st.Sources == nil {
		st.Sources = map[string]*SourceEvidence{}
	}
	e := st.Sources[v.Source]
	if e == nil {
		e = &SourceEvidence{}
		st.Sources[v.Source] = e
	}
	w := v.Strength.Weight()
	if v.Result == core.ResultPass {
		e.S += w
		st.LastPass = v.At
		st.ConsecutiveFail = 0
		if !st.HumanLocked {
			st.Status = core.StatusActive
		}
	} else {
		e.F += w
		st.ConsecutiveFail++
	}
	e.T = v.At
	return Effects{Counted: true}
}

// Score computes trust, level, freshness and status at now.
// PLACEHOLDER implementation.
func (m *Model) Score(st *State, rep Reputation, now time.Time) Scores {
	a, b := 3.0, 3.0
	level := 0
	for _, e := range st.Sources {
		a += e.S
		b += e.F
		if e.S > e.F {
			level++
		}
	}
	mean := a / (a + b)
	return Scores{Trust: mean, Mean: mean, Alpha: a, Beta: b, Level: min(level, 3), Status: st.Status, ConsecutiveFail: st.ConsecutiveFail}
}

// SetStatus applies a human verdict (verified, frozen, deprecated, active)
// and makes it sticky.
func (m *Model) SetStatus(st *State, s core.Status, now time.Time) {
	st.Status = s
	st.HumanLocked = s == core.StatusVerified || s == core.StatusFrozen || s == core.StatusDeprecated
}

// Expire reports whether a QA in st should be deprecated by the expiry job
// at now, and if so deprecates it.
func (m *Model) Expire(st *State, now time.Time) bool { return false }
