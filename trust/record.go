package trust

import (
	"fmt"

	"github.com/memex-dev/memex/core"
)

// Fill writes the computed view of a QA into its record: trust, the
// posterior, freshness, level, status, consecutive_fail and the candidate's
// expiry. Every store calls it, so records read the same everywhere.
func (m *Model) Fill(r *core.Record, sc Scores) {
	r.TrustScore = sc.Trust
	r.Alpha, r.Beta = sc.Alpha, sc.Beta
	r.Freshness = sc.Freshness
	r.ValidationLevel = min(max(sc.Level, 0), MaxLevel)
	r.Level = core.LevelName(r.ValidationLevel)
	if sc.Status != "" {
		r.Status = sc.Status
	}
	r.ConsecutiveFail = sc.ConsecutiveFail
	r.TTLExpireAt = sc.ExpireAt
}

// ImportedState rebuilds the evidence of an imported record, which carries
// counters but not per-source evidence: one full passing source per
// validation level, and one failing source weighted by the failures.
// Statuses a human set stay locked.
func ImportedState(r core.Record) *State {
	creator := r.Author
	if creator == "" {
		creator = r.Source
	}
	st := NewState(creator, r.CreatedAt)
	st.Status = r.Status
	st.HumanLocked = r.Status == core.StatusVerified || r.Status == core.StatusFrozen
	st.ConsecutiveFail = r.ConsecutiveFail
	at := r.LastValidatedAt
	if at.IsZero() {
		at = r.UpdatedAt
	}
	if r.SuccessCount > 0 {
		st.LastPass = at
	}
	for i := range min(max(r.ValidationLevel, 0), MaxLevel) {
		st.Sources[fmt.Sprintf("import:%d", i)] = &SourceEvidence{S: 1, T: at}
	}
	if r.FailureCount > 0 {
		st.Sources["import:fail"] = &SourceEvidence{F: min(1, 0.2*float64(r.FailureCount)), T: at}
	}
	return st
}
