// Package coretest is the conformance suite every core.MemoryPlugin passes:
// it checks exactly what the comments of core/plugin.go promise — candidate
// and search round trips, search order and project scoping, hit and
// validation counters, sentinel errors, idempotency by event id,
// deduplication, exact counters under concurrent use, cancellation, and the
// optional capabilities (Getter, Lister, Deleter, Patcher, Importer,
// Expirer, Statser, Pinger) a plugin implements.
//
// Use it from a plugin's tests:
//
//	func TestConformance(t *testing.T) {
//		coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return newTestStore(t) })
//	}
//
//	func BenchmarkConformance(b *testing.B) {
//		coretest.Bench(b, func(tb testing.TB) core.MemoryPlugin { return newTestStore(tb) })
//	}
//
// newPlugin must return an empty store for every call and clean it up with
// t.Cleanup. To add a test, write a func(t *testing.T, newPlugin NewFunc)
// in this package and list it in Run's table.
package coretest
