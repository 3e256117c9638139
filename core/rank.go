package core

import (
	"cmp"
	"slices"
)

// Rank weights of the server-side search order (SPEC §4), compatible with the
// original service.
const (
	RankRelevanceWeight = 0.55
	RankTrustWeight     = 0.30
	RankFreshWeight     = 0.15
	StaleTrustFactor    = 0.7
	rankFormula         = "0.55*relevance + 0.30*trust + 0.15*freshness + min(0.08, 0.02*level)"
)

// RankScore is the search order score of SPEC §4:
// 0.55·relevance + 0.30·trust + 0.15·freshness + min(0.08, 0.02·level),
// with a stale QA's trust counted ×0.7.
func RankScore(relevance, trust, freshness float64, level int, status Status) float64 {
	if status == StatusStale {
		trust *= StaleTrustFactor
	}
	return RankRelevanceWeight*relevance + RankTrustWeight*trust + RankFreshWeight*freshness + levelBoost(level)
}

func levelBoost(level int) float64 { return min(0.08, 0.02*float64(max(level, 0))) }

// Rank fills in Score (and Explain when explain is set) for every match,
// drops deprecated ones and those whose relevance is below minScore, sorts by
// score descending (ties: newer first, then qa_id), and keeps at most limit
// (limit ≤ 0 keeps all). Every backend calls it so the same records rank the
// same everywhere.
func Rank(ms []Match, minScore float64, limit int, explain bool) []Match {
	keep := func(m *Match) bool { return m.Status != StatusDeprecated && m.Relevance >= minScore }
	n := 0
	for i := range ms {
		if keep(&ms[i]) {
			n++
		}
	}
	out := make([]Match, 0, n) // (a Match is large: one allocation, not one per doubling)
	for _, m := range ms {
		if !keep(&m) {
			continue
		}
		m.Score = RankScore(m.Relevance, m.Trust, m.Freshness, m.ValidationLevel, m.Status)
		if explain {
			m.Explain = &Explain{
				Relevance:  m.Relevance,
				Trust:      m.Trust,
				Freshness:  m.Freshness,
				LevelBoost: levelBoost(m.ValidationLevel),
				StaleTrust: m.Status == StatusStale,
				Formula:    rankFormula,
			}
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		return cmp.Or(
			cmp.Compare(b.Score, a.Score),
			b.UpdatedAt.Compare(a.UpdatedAt),
			cmp.Compare(a.QAID, b.QAID),
		)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
