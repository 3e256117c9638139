// Package httpstore is the memex memory plugin that talks to a remote
// memory service over HTTP: `memex serve` (SPEC §7), or the original
// Memex-CLI memory service (aduib-ai) with Config.Compat. It implements
// core.MemoryPlugin plus the optional Getter, Lister, Deleter, Patcher,
// Expirer, Statser, ProjectLister, Importer and Pinger capabilities, and
// io.Closer.
// Requests and answers are core's payload types: they are the wire contract
// shared with package service, so neither side keeps its own copy.
//
// # Usage
//
//	store, err := httpstore.New(httpstore.Config{
//		BaseURL:   "https://memex.example.com",
//		APIKey:    os.Getenv("MEMEX_API_KEY"),
//		OutboxDir: filepath.Join(dataDir, "outbox"),
//	})
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//
//	matches, err := store.Search(ctx, core.SearchRequest{
//		ProjectID: "acme-api", Query: "go test -race fails on the cache map", Limit: 6,
//	})
//	switch {
//	case errors.Is(err, core.ErrUnavailable):
//		// memory is advisory: run the agent without it
//	case err != nil:
//		return err
//	}
//
//	// Deliver what earlier runs spooled while the service was down.
//	delivered, remaining, err := store.Flush(ctx)
//
// ParseURL builds a Config from a store URL, reading options from its query
// (https://memex.example.com/?compat=true&timeout=5s&retries=2).
//
// # Requests
//
// Every request is made with http.NewRequestWithContext on the caller's ctx
// and bounded per attempt by Config.Timeout (default 10 s). The API key goes
// in "Authorization: Bearer" only when set; it never appears in a log line,
// an error or the outbox. Reads (search, get, list, stats, task grade) and
// writes are retried on core.ErrUnavailable (connection errors, timeouts,
// 408, 429, 5xx) up to Config.Retries times (default 3) with exponential
// backoff and jitter, waiting as long as a 429/503's Retry-After asks (at
// most a minute, never past the caller's deadline). Other 4xx are never
// retried. Every write carries an Idempotency-Key — the request's EventID,
// generated when empty, and also sent as event_id in the body — that stays
// the same on every retry and every later replay, so the service applies it
// once.
//
// After the service was found unavailable, calls fail at once for
// Config.Cooldown (default 30 s; writes go straight to the outbox), so one
// run pays for an outage once, within memory.timeout (SPEC §6, §10).
//
// # Errors
//
// Statuses map back to core's sentinels, so errors.Is behaves as with a
// local store: 400/422 core.ErrInvalid (a *core.FieldError naming the field
// when the service named one), 401 ErrUnauthorized, 403 ErrForbidden, 404
// ErrNotFound, 409 ErrConflict, 413 ErrTooLarge, 408/429/5xx, connection
// errors and timeouts ErrUnavailable — except 501 (not implemented, never
// retried) ErrInvalid, and memex's secret_detected core.ErrSecret. A *StatusError carries the status, the
// service's code and message, and Retry-After.
//
// # The original service
//
// The original answers most errors with HTTP 200 and {"code": <non-zero>,
// "msg": ...}; that is detected on every route and mapped by its code like
// a status. Success envelopes {"code":0,"msg":"success","data":{...}} are
// unwrapped (validate and get read data.record), search answers may be a
// bare array (parsed leniently by wire.ParseSearchResponse), FastAPI's 422
// {"detail": [{"loc": [...], "msg": ...}]} names the field, 204 is accepted
// for hit, candidates and validate, and naive ISO times are read as UTC. It
// creates candidates asynchronously: RecordCandidate then returns an empty
// QAID with status "pending". With Config.Compat (not detected: the
// original has no version route) the search limit is clamped to 1–20, and
// writes are retried or spooled only when they provably never reached the
// service, because the original ignores Idempotency-Key.
//
// # Outbox
//
// With Config.OutboxDir set, a post record (hit, candidate, validation)
// that the service cannot take — unavailable after the retries, or during
// the cooldown — is appended to a spool file in that directory and the call
// returns a *SpooledError, which matches both ErrSpooled and
// core.ErrUnavailable: `memex run` reports "spooled for later delivery" and
// its exit code is unaffected. Admin writes (patch, delete, expire) are
// never spooled: someone is waiting for their answer.
//
// Each process appends to its own file, outbox-<time>-<pid>-<rand>.jsonl
// (mode 0600 in a 0700 directory), one JSON line per write holding the
// operation, the Idempotency-Key, the target base URL and the request body
// as first sent, fsync'd before the call returns. The file is flocked while
// its process may still append to it.
//
// Flush (and FlushOutbox, which also counts rejections) replays the entries
// addressed to this service in order, with their original keys, removing
// each only after a 2xx (the file is rewritten atomically after every
// entry). An entry the service refuses for good (400, 404, 409, 413, 422)
// moves to rejected.jsonl and is reported with ErrRejected; an unavailable
// service, a 401/403 or the end of ctx stops the flush and keeps the rest.
// Delivery is exactly once even when a flush is interrupted and repeated,
// because memex serve applies each Idempotency-Key once: its store
// remembers the event id for core.EventWindow (a week). An entry spooled
// longer than core.EventRetryLimit ago (the window less an hour) is not
// sent: the service may have applied it before the answer was lost, and
// forgotten it since; it moves to rejected.jsonl, reported with
// ErrRejected, for a person to look at. A
// flock on .flush.lock lets one flusher run at a time (ErrFlushBusy for the
// others). `memex run` flushes at its start, bounded by memory.timeout, and
// `memex outbox flush` / `memex outbox status` do it by hand.
//
// On systems without flock(2) the outbox is safe for one memex process at a
// time only.
package httpstore
