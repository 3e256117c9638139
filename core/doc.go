// Package core holds memex's domain: the QA record and match types, the wire
// payloads of the memory API, the MemoryPlugin interface every storage backend
// implements, pure payload builders, lenient decoding of search responses, the
// normalised agent event type, and the sentinel errors that survive the wire.
//
// core imports only the standard library. Everything else in memex depends on
// it and never the other way round.
//
// # Writing a plugin
//
// Implement MemoryPlugin (and any optional capability interfaces such as
// Getter, Lister or Importer that your backend can support), then run the
// conformance suite from your package's tests:
//
//	func TestConformance(t *testing.T) {
//		coretest.Run(t, func(t *testing.T) core.MemoryPlugin {
//			return newTestStore(t)
//		})
//	}
//
// The suite checks exactly what the interface comments promise: round trips,
// ordering, exact counters under concurrent use, cancellation and not-found.
package core
