//go:build integration

package embedded

import "testing"

// TestConcurrentValidationsExact: 64 writers × 1,000 validations on the
// keep-open store (40 under -race), counters exact; it logs the throughput
// docs/PERFORMANCE.md quotes.
func TestConcurrentValidationsExact(t *testing.T) {
	perWriter := 1000
	if raceEnabled {
		perWriter = 40
	}
	concurrentValidationsExact(t, perWriter)
}
