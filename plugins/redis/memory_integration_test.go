//go:build integration

// The integration tier (docs/TESTING.md): Redis memory per QA at 10k QAs
// on a private server (SPEC §9).

package redisstore

import (
	"fmt"
	"strings"
	"testing"
)

// TestMemoryPerQA reports Redis memory per QA at 10k QAs (INFO memory
// delta on a private server, dataMemory, and MEMORY USAGE per kind of
// key).
func TestMemoryPerQA(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 10k QAs")
	}
	const n = 10_000
	per, raw, kinds := measureMemory(t, n)
	usage := float64(kinds["memory usage"]) / n
	withStats := float64(kinds["info with command statistics"]) / n
	var parts []string
	for _, k := range []string{"records", "postings", "posting payload", "id indexes", "statistics", "shares", "sets", "other"} {
		parts = append(parts, fmt.Sprintf("%s %.0f B", k, float64(kinds[k])/n))
	}
	t.Logf("%d QAs, raw question+answer %.0f bytes/QA: INFO used_memory %.0f bytes/QA = %.2f× (%.0f = %.2f× with the command statistics and slow log of the load), MEMORY USAGE %.0f bytes/QA = %.2f× (%s)",
		n, raw, per, per/raw, withStats, withStats/raw, usage, usage/raw, strings.Join(parts, ", "))
	// SPEC §9 asks for at most 3× the raw text, index included, which the
	// layout meets at 10k by both measures (2.9× when measured).
	const bound = 3.0
	for _, m := range []struct {
		name string
		per  float64
	}{{"INFO used_memory", per}, {"MEMORY USAGE", usage}} {
		if m.per/raw > bound {
			t.Errorf("memory per QA by %s is %.2f× the raw text, over SPEC §9's %.1f×", m.name, m.per/raw, bound)
		}
	}
}
