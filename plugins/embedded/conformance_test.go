package embedded

import (
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
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

func TestConformanceKeepOpen(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return newTestStore(t, WithKeepOpen()) })
}

func BenchmarkConformance(b *testing.B) {
	coretest.Bench(b, func(tb testing.TB) core.MemoryPlugin { return newTestStore(tb) })
}
