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
	for _, k := range []string{"records", "postings", "posting payload", "id indexes", "statistics", "other"} {
		parts = append(parts, fmt.Sprintf("%s %.0f B", k, float64(kinds[k])/n))
	}
	t.Logf("%d QAs: %.0f bytes/QA in Redis, raw question+answer %.0f bytes/QA, ratio %.2f× (%s)", n, per, raw, per/raw, strings.Join(parts, ", "))
	// SPEC §9: at most 3× the raw text, index included. This layout
	// measures ~2.8× at 10k (docs/REDIS.md, memory).
	if per/raw > 3 {
		t.Errorf("memory per QA is %.2f× the raw text (was ~2.8×; SPEC §9 allows 3×)", per/raw)
	}
}
