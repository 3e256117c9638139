package decorated_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/plugins/embedded"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/semantic"
)

// flatEmbedder gives every text the same vector: the semantic fusion keeps
// the lexical order, so the conformance suite's ranking cases hold.
type flatEmbedder struct{}

func (flatEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0, 0, 0}
	}
	return out, nil
}
func (flatEmbedder) Dimensions() int { return 4 }
func (flatEmbedder) Name() string    { return "flat" }

// wrapped is a store as memex run sees it with [semantic] on: semantic
// search over the redaction every store gets (cmd/memex plugins.go) over
// the store itself.
func wrapped(t *testing.T, s core.MemoryPlugin) core.MemoryPlugin {
	t.Helper()
	h, err := semantic.NewHybrid(flatEmbedder{}, semantic.HybridConfig{Weight: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	return semantic.Wrap(redact.WrapStore(s, nil, redact.PolicyRedact), h)
}

// The decorators keep every capability of the store they wrap (issue 14.3):
// the whole conformance suite runs over the wrapped stores.
func TestConformanceWrappedEmbedded(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin {
		s, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return wrapped(t, s)
	})
}

func TestConformanceWrappedRedis(t *testing.T) {
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin {
		s, err := redisstore.Open(t.Context(), redistest.URL(t), redisstore.WithPrefix(redistest.Prefix(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return wrapped(t, s)
	})
}

func TestWrappedStoreKeepsCapabilities(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	w := wrapped(t, s)
	if _, ok := w.(*semantic.Store); !ok {
		t.Fatalf("wrapped store is %T, want *semantic.Store", w)
	}
	rr, ok := core.As[core.RunRecorder](w)
	if !ok {
		t.Fatal("semantic.Wrap(embedded) lost core.RunRecorder: a run is no longer one transaction")
	}
	if _, ok := rr.(*redact.Store); !ok {
		t.Errorf("RunRecorder is %T: the run report bypasses the redaction", rr)
	}
	for name, ok := range map[string]bool{
		"Getter":           has[core.Getter](w),
		"Lister":           has[core.Lister](w),
		"Deleter":          has[core.Deleter](w),
		"Patcher":          has[core.Patcher](w),
		"Importer":         has[core.Importer](w),
		"CandidateBatcher": has[core.CandidateBatcher](w),
		"Expirer":          has[core.Expirer](w),
		"Statser":          has[core.Statser](w),
		"Pinger":           has[core.Pinger](w),
		"Auditor":          has[core.Auditor](w),
		"AuditBatcher":     has[core.AuditBatcher](w),
	} {
		if !ok {
			t.Errorf("the wrapped embedded store lost core.%s", name)
		}
	}
	// Capabilities the embedded store lacks are not invented by the
	// decorators that forward them.
	if has[core.Receipts](w) {
		t.Error("the wrapped embedded store claims receipts it does not have")
	}
}

func has[T any](p core.MemoryPlugin) bool { _, ok := core.As[T](p); return ok }
