//go:build integration

package redisstore

import "testing"

// TestConcurrentValidationsExact: 64 writers × 1,000 validations over 64
// QAs (150 under -race), every 50th commit's reply lost: every counter
// exact.
func TestConcurrentValidationsExact(t *testing.T) {
	perW := 1000
	if raceEnabled {
		perW = 150 // same concurrency, fewer rounds: -race is ~5× slower
	}
	concurrentValidationsExact(t, perW)
}

// TestConcurrentHitsExact: 32 writers × 100 hit reports with lost replies,
// every reference counted once.
func TestConcurrentHitsExact(t *testing.T) { concurrentHitsExact(t, 100) }
