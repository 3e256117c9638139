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
// delta on a private server, and MEMORY USAGE per kind of key).
func TestMemoryPerQA(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 10k QAs")
	}
	const n = 10_000
	per, raw, kinds := measureMemory(t, n)
	var parts []string
	for _, k := range []string{"records", "postings", "posting payload", "id indexes", "statistics", "shares", "sets", "other"} {
		parts = append(parts, fmt.Sprintf("%s %.0f B", k, float64(kinds[k])/n))
	}
	t.Logf("%d QAs: %.0f bytes/QA in Redis, raw question+answer %.0f bytes/QA, ratio %.2f× (%s)", n, per, raw, per/raw, strings.Join(parts, ", "))
	// SPEC §9 asks for at most 3× the raw text, index included; the
	// layout measures 3.41× at 10k, the kept project statistics ~105 B/QA
	// of it; without them 3.04× (the records and indexes, whose fixed
	// bucket counts weigh most on a small store). docs/PERFORMANCE.md
	// reports the target as not met at 10k. This bound keeps the layout
	// from growing unnoticed.
	const bound = 3.5
	if per/raw > bound {
		t.Errorf("memory per QA is %.2f× the raw text, over this layout's %.1f× (3.41× when measured; SPEC §9 asks 3×)", per/raw, bound)
	}
}
