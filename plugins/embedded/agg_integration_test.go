//go:build integration

package embedded

import "testing"

// TestStatsKeptEqualScanLong is TestStatsKeptEqualScan with 400 random
// writes per seed: longer histories (more time passing, expiries, imports
// over earlier records).
func TestStatsKeptEqualScanLong(t *testing.T) {
	statsKeptEqualScan(t, 400)
}
