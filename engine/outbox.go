package engine

import (
	"context"
	"errors"

	"github.com/memex-dev/memex/core"
)

// Spooler is implemented by stores that keep the writes they cannot deliver
// now in a local outbox and deliver them later (plugins/http). Spools
// reports whether the outbox is on. Post sends a run's records to such a
// store even after the search failed or an earlier write found the store
// unavailable: the store spools them at once instead of losing them.
type Spooler interface {
	Spools() bool
}

// spooled reports whether err says the write was kept for later delivery:
// an error in its chain has a Spooled() bool method returning true (the
// engine does not import plugins, so it asks by method).
func spooled(err error) bool {
	var s interface{ Spooled() bool }
	return errors.As(err, &s) && s.Spooled()
}

// spools reports whether the engine's store has an outbox.
func (e *Engine) spools() bool {
	s, ok := core.As[Spooler](e.store)
	return ok && s.Spools()
}

// spoolAfterSearchFailure: the search failed because the store was
// unavailable, but the store keeps writes in an outbox, so the run's
// records are still worth sending (SPEC §10: spooled, delivered later).
func (e *Engine) spoolAfterSearchFailure(pre PreResult) bool {
	return pre.MemoryErr != nil && e.spools() &&
		(errors.Is(pre.MemoryErr, core.ErrUnavailable) || errors.Is(pre.MemoryErr, context.DeadlineExceeded))
}
