// Package service is memex's HTTP API (memex serve, SPEC §7): echo handlers
// that expose any core.MemoryPlugin to agents and operators, with API keys,
// per-project access control, quotas, rate limits, idempotent writes,
// receipts (SPEC §5.4), an audit trail, Prometheus metrics on the server's
// own registry, an OpenAPI document and the expiry job.
//
// Handlers are thin: decode with core's payload types, Validate, authorise
// the project, call the store, write JSON. Every error is rendered by one
// HTTPErrorHandler that maps core's sentinel errors to HTTP statuses and the
// one error shape {"error":{"code":"<snake_case>","message":"..."}}.
//
// The package imports core, echo and prometheus only; the gatekeeper's
// server-side selection (POST /v1/qa/inject) is injected with WithInjector.
package service
