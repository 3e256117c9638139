//go:build integration

package redisstore

import "testing"

// TestStatsKeptEqualScanLong is TestStatsKeptEqualScan with 400 random
// writes per seed: longer histories (more time passing, expiries, imports
// over earlier records).
func TestStatsKeptEqualScanLong(t *testing.T) {
	testStatsKept(t, 400, func(t *testing.T, opts ...Option) *Store { return newShared(t, opts...) })
}
