package semantic

import (
	"context"
	"errors"

	"github.com/memex-dev/memex/core"
)

// Store decorates a core.MemoryPlugin so its Search is hybrid. Every other
// method is the wrapped plugin's. It fails open: when the embedder fails,
// Search logs a warning (through WithHybridLogger's logger) and returns the
// lexical matches with no error, so memex keeps working without the model.
//
// Optional capabilities of the wrapped plugin (core.Getter, io.Closer, ...)
// are not promoted: callers that look for them should type-assert on
// Unwrap().
type Store struct {
	core.MemoryPlugin
	h *Hybrid
}

// Wrap returns p unchanged when h is nil or its weight is 0, else a *Store.
func Wrap(p core.MemoryPlugin, h *Hybrid) core.MemoryPlugin {
	if h == nil || h.cfg.Weight == 0 {
		return p
	}
	return &Store{MemoryPlugin: p, h: h}
}

var _ core.MemoryPlugin = (*Store)(nil)

// Unwrap returns the wrapped plugin.
func (s *Store) Unwrap() core.MemoryPlugin { return s.MemoryPlugin }

// Search is Hybrid.Search over the wrapped plugin, failing open.
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	ms, err := s.h.Search(ctx, s.MemoryPlugin, req)
	var re *RerankError
	if errors.As(err, &re) {
		s.h.log.Warn("semantic rerank failed; using lexical order", "op", "search", "project", req.ProjectID, "model", s.h.e.Name(), "error", err)
		return ms, nil
	}
	return ms, err
}
