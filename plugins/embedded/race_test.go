//go:build race

package embedded

// raceEnabled: the race detector slows every call several times; the load
// tests shrink so the package stays within its time budget.
const raceEnabled = true
