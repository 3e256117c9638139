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
// Store is a core.Unwrapper: every optional capability of the wrapped
// plugin (core.RunRecorder and its one-transaction run, core.Getter,
// io.Closer, ...) stays available through core.As, which the engine, the
// service and cmd/memex use instead of type assertions.
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

var (
	_ core.MemoryPlugin = (*Store)(nil)
	_ core.Unwrapper    = (*Store)(nil)
)

// Unwrap returns the wrapped plugin.
func (s *Store) Unwrap() core.MemoryPlugin { return s.MemoryPlugin }

// Search is Hybrid.Search over the wrapped plugin, failing open.
func (s *Store) Search(ctx context.Context, req core.SearchRequest) ([]core.Match, error) {
	if err := req.Validate(); err != nil {
		return nil, err // the fused search asks the store other bounds
	}
	ms, err := s.h.Search(ctx, s.MemoryPlugin, req)
	var re *RerankError
	if errors.As(err, &re) {
		s.h.log.Warn("semantic rerank failed; using lexical order", "op", "search", "project", req.ProjectID, "model", s.h.e.Name(), "error", err)
		return ms, nil
	}
	return ms, err
}
