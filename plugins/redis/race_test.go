//go:build race

package redisstore

// raceEnabled: the race detector slows every call ~5×; the load tests
// shrink so the package stays within its time budget.
const raceEnabled = true
