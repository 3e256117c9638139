package gatekeeper

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
	"github.com/memex-dev/memex/trust/ledger"
)

// Reason codes of a Decision. Filter codes name the first filter a match
// failed; every input match gets exactly one filter, chosen or skipped code.
const (
	ReasonFilteredInvalid     = "filtered_invalid"     // no qa_id
	ReasonFilteredDuplicate   = "filtered_duplicate"   // qa_id seen earlier in the input
	ReasonFilteredStatus      = "filtered_status"      // status not usable (or deprecated)
	ReasonFilteredQuarantined = "filtered_quarantined" // reads like instructions; needs a human or strong verdict
	ReasonFilteredExpired     = "filtered_expired"     // expiry_at ≤ now
	ReasonFilteredRelevance   = "filtered_relevance"   // relevance < min_score
	ReasonFilteredStale       = "filtered_stale"       // freshness < 0.001 (compat)
	ReasonFilteredBlocked     = "filtered_blocked"     // consecutive_fail ≥ block threshold
	ReasonFilteredNoAnswer    = "filtered_no_answer"   // a question-only QA (ledger.Showable)

	ReasonChosenTrusted   = "chosen_trusted"   // in the trusted set / main pass
	ReasonChosenProbation = "chosen_probation" // the exploration slot
	ReasonChosenFallback  = "chosen_fallback"  // compat single-item fallback

	ReasonSkippedMaxInject = "skipped_max_inject" // qualified, but max_inject was reached
	ReasonSkippedLevel     = "skipped_level"      // level below the threshold
	ReasonSkippedTrust     = "skipped_trust"      // trust below min_trust_show
	ReasonSkippedStale     = "skipped_stale"      // stale QAs are never in the trusted set
	ReasonDisplaced        = "displaced_by_probation"
	ReasonProbationLost    = "probation_lost"      // another draw scored higher
	ReasonProbationLow     = "probation_low_theta" // θ < 0.4
	ReasonProbationSkipped = "probation_skipped"   // the ε roll kept the trusted item
	ReasonProbationOff     = "probation_disabled"  // explore_slots = 0

	ReasonFallbackBlocked = "fallback_blocked_has_strong" // compat: a usable strong match exists
	ReasonNoCandidate     = "candidate_suppressed"
	ReasonSummary         = "summary"
)

// ProbationMinTheta is the lowest Thompson draw that may enter the
// exploration slot (SPEC §5.4).
const ProbationMinTheta = 0.4

// staleFreshness is the original's stale cut: freshness below it is stale.
const staleFreshness = 0.001

// Select chooses the inject items (SPEC §3.1, §5.4). It is pure: the only
// randomness is rng (nil disables the exploration slot), the only clock is
// now, and ms is not modified. Every input match gets a Reason; every
// Thompson draw is in Decision.Draws.
func Select(ms []core.Match, cfg Config, now time.Time, rng *rand.Rand) Decision {
	compat := cfg.Order == OrderLevelFirst
	d := Decision{WriteCandidate: true, Items: []Item{}, Reasons: make([]Reason, 0, len(ms)+2)}

	usable := make([]*core.Match, 0, len(ms))
	seen := make(map[string]struct{}, len(ms))
	top1 := math.Inf(-1)
	for i := range ms {
		m := &ms[i]
		if m.Score > top1 {
			top1 = m.Score
		}
		if code, detail := filter(m, cfg, compat, now, seen); code != "" {
			d.Reasons = append(d.Reasons, Reason{Code: code, QAID: m.QAID, Detail: detail})
			continue
		}
		seen[m.QAID] = struct{}{}
		usable = append(usable, m)
	}

	hasStrong := slices.ContainsFunc(usable, func(m *core.Match) bool { return m.ValidationLevel >= cfg.MinLevelInject })
	if compat && hasStrong {
		d.WriteCandidate = false
		d.Reasons = append(d.Reasons, Reason{Code: ReasonNoCandidate, Detail: fmt.Sprintf("has_strong: a usable match has level >= %d", cfg.MinLevelInject)})
	} else if cfg.SkipIfTop1ScoreGE > 0 && top1 >= cfg.SkipIfTop1ScoreGE {
		d.WriteCandidate = false
		d.Reasons = append(d.Reasons, Reason{Code: ReasonNoCandidate, Detail: fmt.Sprintf("top1_score=%.4g >= %.4g", top1, cfg.SkipIfTop1ScoreGE)})
	}

	if compat {
		sortLevelFirst(usable)
	} else {
		sortTrust(usable)
	}

	// Main pass: the trusted set.
	var trusted, rest []*core.Match
	for _, m := range usable {
		switch {
		case !compat && m.Status == core.StatusStale:
			rest = append(rest, m)
		case !compat && m.Status == core.StatusVerified:
			// A human verified it: trusted whatever its evidence so far.
			if len(trusted) >= cfg.MaxInject {
				d.Reasons = append(d.Reasons, Reason{Code: ReasonSkippedMaxInject, QAID: m.QAID, Detail: fmt.Sprintf("max_inject=%d", cfg.MaxInject)})
			} else {
				trusted = append(trusted, m)
			}
		case m.ValidationLevel < cfg.MinLevelInject:
			rest = append(rest, m)
		case !(m.Trust >= cfg.MinTrustShow):
			rest = append(rest, m)
		case len(trusted) >= cfg.MaxInject:
			d.Reasons = append(d.Reasons, Reason{Code: ReasonSkippedMaxInject, QAID: m.QAID, Detail: fmt.Sprintf("max_inject=%d", cfg.MaxInject)})
		default:
			trusted = append(trusted, m)
		}
	}
	for _, m := range trusted {
		d.Items = append(d.Items, Item{Match: *m, Why: ReasonChosenTrusted})
		d.Reasons = append(d.Reasons, Reason{Code: ReasonChosenTrusted, QAID: m.QAID,
			Detail: fmt.Sprintf("level=%d trust=%.3f relevance=%.3f", m.ValidationLevel, m.Trust, m.Relevance)})
	}

	// Compat fallback: one item at level ≥ MinLevelFallback among the first
	// MaxInject usable ones, only when the main pass took nothing and no
	// usable strong match exists.
	fellBack := ""
	if cfg.Fallback && len(trusted) == 0 && len(usable) > 0 {
		if hasStrong {
			d.Reasons = append(d.Reasons, Reason{Code: ReasonFallbackBlocked, Detail: fmt.Sprintf("a usable match has level >= %d but trust < %.2f", cfg.MinLevelInject, cfg.MinTrustShow)})
		} else {
			for _, m := range usable[:min(len(usable), max(cfg.MaxInject, 0))] {
				if m.ValidationLevel >= cfg.MinLevelFallback && m.Trust >= cfg.MinTrustShow {
					d.Items = append(d.Items, Item{Match: *m, Why: ReasonChosenFallback})
					d.Reasons = append(d.Reasons, Reason{Code: ReasonChosenFallback, QAID: m.QAID,
						Detail: fmt.Sprintf("level=%d trust=%.3f", m.ValidationLevel, m.Trust)})
					fellBack = m.QAID
					break
				}
			}
		}
	}

	pool := rest[:0:0]
	for _, m := range rest {
		if m.QAID != fellBack {
			pool = append(pool, m)
		}
	}
	if cfg.ExploreSlots <= 0 || rng == nil {
		for _, m := range pool {
			d.Reasons = append(d.Reasons, notTrusted(m, cfg, compat))
		}
		if len(pool) > 0 && !compat {
			d.Reasons = append(d.Reasons, Reason{Code: ReasonProbationOff, Detail: fmt.Sprintf("%d usable matches not trusted", len(pool))})
		}
	} else {
		explore(&d, pool, trusted, cfg, rng)
	}
	d.Reasons = append(d.Reasons, Reason{Code: ReasonSummary,
		Detail: fmt.Sprintf("matches=%d usable=%d injected=%d has_strong=%t", len(ms), len(usable), len(d.Items), hasStrong)})
	return d
}

// filter returns the reason m is not usable, or "".
func filter(m *core.Match, cfg Config, compat bool, now time.Time, seen map[string]struct{}) (code, detail string) {
	if !evidence.ValidID(m.QAID) {
		return ReasonFilteredInvalid, "qa_id empty or not citable as an anchor"
	}
	if _, dup := seen[m.QAID]; dup {
		return ReasonFilteredDuplicate, ""
	}
	if !ledger.Showable(m.Answer) {
		return ReasonFilteredNoAnswer, "question-only QA: nothing to tell"
	}
	if m.Status == core.StatusDeprecated || !slices.Contains(cfg.ActiveStatuses, m.Status) {
		return ReasonFilteredStatus, "status=" + string(m.Status)
	}
	verified := m.Status == core.StatusVerified
	if m.Quarantined && !verified {
		return ReasonFilteredQuarantined, "awaiting a human or strong verdict"
	}
	if !compat {
		if m.ExpiryAt != nil && !now.Before(*m.ExpiryAt) {
			return ReasonFilteredExpired, "expiry_at=" + m.ExpiryAt.UTC().Format(time.RFC3339)
		}
		if !(m.Relevance >= cfg.MinScore) {
			return ReasonFilteredRelevance, fmt.Sprintf("relevance=%.3f < %.3f", m.Relevance, cfg.MinScore)
		}
	}
	if cfg.ExcludeStale && m.Freshness < staleFreshness {
		return ReasonFilteredStale, fmt.Sprintf("freshness=%.4f", m.Freshness)
	}
	if cfg.BlockIfConsecutiveFailGE > 0 && (compat || !verified) {
		if cf := consecutiveFail(m); cf >= cfg.BlockIfConsecutiveFailGE {
			return ReasonFilteredBlocked, fmt.Sprintf("consecutive_fail=%d >= %d", cf, cfg.BlockIfConsecutiveFailGE)
		}
	}
	return "", ""
}

// ConsecutiveFail is the largest consecutive-fail count a match carries:
// the typed field, metadata.consecutive_fail and
// metadata.stats.consecutive_fail (ints or numeric strings; the original
// client read only the first metadata path, the server wrote the second).
func ConsecutiveFail(m core.Match) int { return consecutiveFail(&m) }

func consecutiveFail(m *core.Match) int {
	cf := m.ConsecutiveFail
	if v, ok := metaInt(m.Metadata["consecutive_fail"]); ok {
		cf = max(cf, v)
	}
	if st, ok := m.Metadata["stats"].(map[string]any); ok {
		if v, ok := metaInt(st["consecutive_fail"]); ok {
			cf = max(cf, v)
		}
	}
	return cf
}

func metaInt(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		f = float64(x)
	case int32:
		return int(x), true
	case float64:
		f = x
	case float32:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return int(max(min(f, math.MaxInt32), math.MinInt32)), true
}

// cmpDesc compares two floats descending; NaN compares equal to anything,
// as the original's partial_cmp(..).unwrap_or(Equal).
func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// sortLevelFirst is the original's stable sort on (level, trust, score,
// freshness), descending; the final tie-break is the input (server) order.
func sortLevelFirst(ms []*core.Match) {
	slices.SortStableFunc(ms, func(a, b *core.Match) int {
		return cmp.Or(
			cmp.Compare(b.ValidationLevel, a.ValidationLevel),
			cmpDesc(a.Trust, b.Trust),
			cmpDesc(a.Score, b.Score),
			cmpDesc(a.Freshness, b.Freshness),
		)
	})
}

// sortTrust orders by trust × relevance, newest first on ties, then qa_id
// (a total order: ids are unique after the duplicate filter).
func sortTrust(ms []*core.Match) {
	slices.SortFunc(ms, func(a, b *core.Match) int {
		return cmp.Or(
			cmpDesc(finite(a.Trust*a.Relevance), finite(b.Trust*b.Relevance)),
			b.UpdatedAt.Compare(a.UpdatedAt),
			strings.Compare(a.QAID, b.QAID),
		)
	})
}

// finite maps NaN to -Inf so sort comparisons stay a strict weak order.
func finite(f float64) float64 {
	if math.IsNaN(f) {
		return math.Inf(-1)
	}
	return f
}

func notTrusted(m *core.Match, cfg Config, compat bool) Reason {
	switch {
	case !compat && m.Status == core.StatusStale:
		return Reason{Code: ReasonSkippedStale, QAID: m.QAID, Detail: "status=stale"}
	case m.ValidationLevel < cfg.MinLevelInject:
		return Reason{Code: ReasonSkippedLevel, QAID: m.QAID, Detail: fmt.Sprintf("level=%d < %d", m.ValidationLevel, cfg.MinLevelInject)}
	default:
		return Reason{Code: ReasonSkippedTrust, QAID: m.QAID, Detail: fmt.Sprintf("trust=%.3f < %.3f", m.Trust, cfg.MinTrustShow)}
	}
}

// explore fills the exploration slots by Thompson sampling (SPEC §5.4).
func explore(d *Decision, pool, trusted []*core.Match, cfg Config, rng *rand.Rand) {
	// Draw in a canonical order so the result does not depend on the
	// input's order, only on the seed.
	slices.SortFunc(pool, func(a, b *core.Match) int {
		return cmp.Or(cmpDesc(finite(a.Relevance), finite(b.Relevance)), b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.QAID, b.QAID))
	})
	type cand struct {
		m     *core.Match
		draw  int
		value float64
	}
	var eligible []cand
	for _, m := range pool {
		a, b := posterior(*m)
		theta := BetaSample(rng, a, b)
		v := theta * m.Relevance
		d.Draws = append(d.Draws, Draw{QAID: m.QAID, Theta: theta, Value: v})
		if theta >= ProbationMinTheta && !math.IsNaN(v) {
			eligible = append(eligible, cand{m: m, draw: len(d.Draws) - 1, value: v})
		} else {
			d.Reasons = append(d.Reasons, Reason{Code: ReasonProbationLow, QAID: m.QAID, Detail: fmt.Sprintf("theta=%.3f < %.2f", theta, ProbationMinTheta)})
		}
	}
	slices.SortFunc(eligible, func(a, b cand) int { return cmp.Or(cmpDesc(a.value, b.value), cmp.Compare(a.draw, b.draw)) })

	bestTrust := 0.0
	for _, m := range trusted {
		bestTrust = max(bestTrust, m.Trust)
	}
	eps := min(max(0.5*(1-bestTrust), 0.05), 0.5)

	taken := make(map[string]bool)
	for i, c := range eligible {
		if i >= cfg.ExploreSlots {
			break
		}
		free := len(d.Items) < cfg.MaxInject || len(d.Items) == 0
		if !free {
			// Only a trusted item may be displaced, never a fallback or
			// another probation item.
			last := len(d.Items) - 1
			if last < 0 || d.Items[last].Probation || d.Items[last].Why != ReasonChosenTrusted {
				d.Reasons = append(d.Reasons, Reason{Code: ReasonProbationSkipped, QAID: c.m.QAID, Detail: "no slot free and no trusted item to displace"})
				continue
			}
			roll := rng.Float64()
			if roll >= eps {
				d.Reasons = append(d.Reasons, Reason{Code: ReasonProbationSkipped, QAID: c.m.QAID, Detail: fmt.Sprintf("epsilon=%.3f roll=%.3f", eps, roll)})
				continue
			}
			out := d.Items[last]
			d.Items = d.Items[:last]
			d.Reasons = append(d.Reasons, Reason{Code: ReasonDisplaced, QAID: out.QAID, Detail: fmt.Sprintf("epsilon=%.3f roll=%.3f by %s", eps, roll, c.m.QAID)})
		}
		d.Draws[c.draw].Took = true
		taken[c.m.QAID] = true
		it := Item{Match: *c.m, Probation: true, Why: ReasonChosenProbation}
		// Placed second after a trusted item, first if none; several
		// probation items stay together in draw order.
		pos := min(1, len(d.Items))
		for pos < len(d.Items) && d.Items[pos].Probation {
			pos++
		}
		d.Items = slices.Insert(d.Items, pos, it)
		d.Reasons = append(d.Reasons, Reason{Code: ReasonChosenProbation, QAID: c.m.QAID,
			Detail: fmt.Sprintf("theta=%.3f value=%.3f level=%d trust=%.3f", d.Draws[c.draw].Theta, c.value, c.m.ValidationLevel, c.m.Trust)})
	}
	for i, c := range eligible {
		if !taken[c.m.QAID] && i >= cfg.ExploreSlots {
			d.Reasons = append(d.Reasons, Reason{Code: ReasonProbationLost, QAID: c.m.QAID, Detail: fmt.Sprintf("value=%.3f", c.value)})
		}
	}
}

// posterior returns the match's trust posterior Beta(α, β); when the match
// carries none (an original service), it is derived from trust as
// α = 1 + 4·trust, β = 1 + 4·(1 − trust).
func posterior(m core.Match) (a, b float64) {
	if validShape(m.Alpha) && validShape(m.Beta) {
		return m.Alpha, m.Beta
	}
	t := m.Trust
	if math.IsNaN(t) {
		t = 0
	}
	t = min(max(t, 0), 1)
	return 1 + 4*t, 1 + 4*(1-t)
}

func validShape(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
