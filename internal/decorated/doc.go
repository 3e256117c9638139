// Package decorated runs the conformance suite (core/coretest) over the
// stores as memex opens them: behind extract/redact.Store and
// semantic.Store. Decorators keep every capability of the store they wrap
// (core.As), so the whole suite passes on the wrapped embedded and Redis
// stores. It holds tests only.
package decorated
