package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/trust"
)

func newTestStore(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(filepath.Join(tb.TempDir(), "memex.db"), opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return newTestStore(t) })
}

// TestLedgerRules runs the domain rules of trust/ledger in both flavours.
func TestLedgerRules(t *testing.T) {
	coretest.RunLedger(t, func(t *testing.T, f coretest.Flavour) core.MemoryPlugin {
		p := trust.DefaultParams()
		p.CountCreator = f == coretest.Single
		return newTestStore(t, WithTrustParams(p))
	})
}

func TestConformanceKeepOpen(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return newTestStore(t, WithKeepOpen()) })
}

func BenchmarkConformance(b *testing.B) {
	coretest.Bench(b, func(tb testing.TB) core.MemoryPlugin { return newTestStore(tb) })
}

// TestEventWindow runs the event window rule with the store's clock moved
// on.
func TestEventWindow(t *testing.T) {
	coretest.RunEventWindow(t, func(t *testing.T) (core.MemoryPlugin, coretest.AgeFunc) {
		clk := newTestClock(time.Now())
		return newTestStore(t, WithClock(clk.now)), func(_ *testing.T, d time.Duration) { clk.add(d) }
	})
}
