package gatekeeper

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// mk builds an active match: level, trust, score, freshness; relevance 0.5.
func mk(id string, level int, trust, score, fresh float64) core.Match {
	return core.Match{
		QAID: id, Question: "q " + id, Answer: "a " + id, Status: core.StatusActive,
		ValidationLevel: level, Level: core.LevelName(level), Trust: trust, Score: score,
		Freshness: fresh, Relevance: 0.5, Metadata: map[string]any{}, Tags: []string{},
	}
}

func with(m core.Match, f func(*core.Match)) core.Match { f(&m); return m }

func ids(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.QAID)
	}
	return out
}

// reasonFor is the last (final) reason recorded for id.
func reasonFor(d Decision, id string) string {
	code := ""
	for _, r := range d.Reasons {
		if r.QAID == id {
			code = r.Code
		}
	}
	return code
}

func hasReason(d Decision, code string) bool {
	for _, r := range d.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func mustEqual[T comparable](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if got != want {
		tb.Fatalf("%s = %v, want %v", what, got, want)
	}
}
