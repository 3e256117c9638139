package httpstore

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/plugins/embedded"
	"github.com/memex-dev/memex/service"
)

// principalKeys sends each call with the API key of the evidence source in
// its context (coretest speaks for several independent sources; over the
// wire a source is a key). Calls without one use the store's admin key.
type principalKeys struct{ next http.RoundTripper }

func (p principalKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	if pr, ok := core.PrincipalFrom(r.Context()); ok && pr.ID != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer sk-"+pr.ID)
	}
	return p.next.RoundTrip(r)
}

// conformanceKeys: an admin key for the suite itself and an agent key per
// evidence source the suite uses.
func conformanceKeys() []service.Key {
	keys := []service.Key{{ID: "suite", SecretSHA256: service.HashSecret("sk-suite"), Role: "admin", Projects: []string{"*"}}}
	ids := []string{"creator", "final", "local"}
	for c := 'a'; c <= 'z'; c++ {
		ids = append(ids, "agent-"+string(c))
	}
	for i := range 100 {
		ids = append(ids, "agent-"+itoa(i))
	}
	for _, id := range ids {
		keys = append(keys, service.Key{ID: id, SecretSHA256: service.HashSecret("sk-" + id), Role: "agent", Projects: []string{"*"}})
	}
	return keys
}

// TestConformance runs the conformance suite through the whole stack:
// httpstore → memex serve (package service) → the embedded store.
func TestConformance(t *testing.T) {
	keys := conformanceKeys()
	coretest.Run(t, func(t *testing.T) core.MemoryPlugin {
		st, err := embedded.Open(filepath.Join(t.TempDir(), "memex.db"), embedded.WithKeepOpen())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg := service.DefaultConfig()
		cfg.Keys = keys
		cfg.RequireReceipts = false
		cfg.ExpiryInterval = -1
		srv, err := service.New(st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		s, err := New(Config{BaseURL: ts.URL, APIKey: "sk-suite", Cooldown: -1},
			WithHTTPClient(&http.Client{Transport: principalKeys{http.DefaultTransport}}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		// The whole Store, Expirer included: memex serve honours the
		// "now" of POST /v1/qa/expire from the suite's admin key.
		return s
	})
}
