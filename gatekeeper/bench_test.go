package gatekeeper

import (
	"fmt"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

func benchMatches(n int) []core.Match {
	rng := seeded(42)
	ms := make([]core.Match, n)
	statuses := []core.Status{core.StatusCandidate, core.StatusActive, core.StatusActive, core.StatusVerified, core.StatusStale}
	for i := range ms {
		m := mk(fmt.Sprintf("qa-%d", i), rng.IntN(4), rng.Float64(), rng.Float64(), rng.Float64())
		m.Relevance = rng.Float64()
		m.Status = statuses[rng.IntN(len(statuses))]
		m.Alpha, m.Beta = 1+rng.Float64()*10, 1+rng.Float64()*10
		m.UpdatedAt = now.Add(-time.Duration(rng.IntN(1000)) * time.Hour)
		ms[i] = m
	}
	return ms
}

func BenchmarkSelect(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		ms := benchMatches(n)
		for _, prof := range []struct {
			name string
			cfg  Config
		}{{"default", DefaultConfig()}, {"compat", CompatConfig()}} {
			b.Run(fmt.Sprintf("%s/n=%d", prof.name, n), func(b *testing.B) {
				rng := seeded(1)
				b.ReportAllocs()
				for b.Loop() {
					Select(ms, prof.cfg, now, rng)
				}
			})
		}
	}
}

func BenchmarkRender(b *testing.B) {
	d := Select(benchMatches(50), DefaultConfig(), now, seeded(1))
	b.ReportAllocs()
	for b.Loop() {
		Render(d.Items, DefaultConfig(), now)
	}
}
