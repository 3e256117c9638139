package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/trust"
)

// newShared returns a store on the shared test server under a prefix
// unique to tb (deleted in cleanup).
func newShared(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	return openPrefix(tb, redistest.URL(tb), redistest.Prefix(tb), opts...)
}

// openPrefix opens a store on url under prefix (several stores on one
// prefix are several processes sharing a Redis), closed at the end.
func openPrefix(tb testing.TB, url, prefix string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), url, append([]Option{WithPrefix(prefix)}, opts...)...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newOnClient returns a store over a caller-owned client (New).
func newOnClient(tb testing.TB, c redis.UniversalClient, opts ...Option) *Store {
	tb.Helper()
	s, err := New(c, append([]Option{WithPrefix(redistest.Prefix(tb))}, opts...)...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return newShared(t) })
}

// TestLedgerRules runs the domain rules of trust/ledger in both flavours.
func TestLedgerRules(t *testing.T) {
	coretest.RunLedger(t, func(t *testing.T, f coretest.Flavour) core.MemoryPlugin {
		p := trust.DefaultParams()
		p.CountCreator = f == coretest.Single
		return newShared(t, WithTrustParams(p))
	})
}

func BenchmarkConformance(b *testing.B) {
	coretest.Bench(b, func(tb testing.TB) core.MemoryPlugin { return newShared(tb) })
}
