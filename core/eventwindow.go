package core

import "time"

// EventWindow is how long a store remembers an event id after applying
// its write (SPEC §10: no lost or doubled updates). A write sent again
// with the same event id within the window is applied once and answered
// with its first result; past the window a store may have forgotten the
// id, and a write sent again would be applied again. Every store keeps an
// id at least this long: the Redis store gives its event key this
// lifetime, the embedded store prunes the ids whose time slot ended more
// than a window ago.
//
// The window is the latest retry memex makes. Within a call, clients
// retry for seconds (the http store's retries and its caller's timeout,
// the engine's one-by-one fallback after an atomic run report); the
// service's own Idempotency-Key cache answers repeats for a day. The
// outbox (plugins/http) is the late one: it delivers a write spooled
// while the service was unreachable at the next `memex run`, hook or
// `memex outbox flush`, after an outage, a weekend or a trip offline,
// with the event id it was first sent with. A week covers those, and is
// as long as a search receipt lives by default, past which a spooled hit
// or validation would weigh nothing anyway. The outbox delivers a write
// only within EventRetryLimit of spooling it and sets older ones aside.
const EventWindow = 7 * 24 * time.Hour

// EventRetryLimit is how long after a write was first sent it may be sent
// again with the same event id: the window less an hour, the margin for
// the time the write's first attempts took before it was spooled.
const EventRetryLimit = EventWindow - time.Hour
