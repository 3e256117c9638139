// Package embedded is memex's default, no-server memory store: one bbolt
// file (a B+tree database with ACID, copy-on-write transactions) holding the
// QA records, their trust evidence, a per-scope inverted index for lexical
// retrieval, the idempotency log and the reputation book.
//
// Several memex processes may use one store at once. By default a Store holds
// the file open only for the duration of one operation: each operation opens
// the file (waiting up to the lock timeout for bbolt's flock), runs one
// transaction and closes it, so two agents in two terminals, or an import and
// a run, take turns. Long-lived single-process users (memex serve) pass
// WithKeepOpen to hold the file for the Store's lifetime.
//
// The on-disk schema is documented in docs/STORAGE.md.
package embedded
