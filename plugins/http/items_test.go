package httpstore

import (
	"net/http/httptest"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/service"
)

// TestItemsConformance runs the namespaced store's suite through the whole
// stack: httpstore → memex serve's /v1/store/… → the Redis store.
func TestItemsConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore {
		st, err := redisstore.Open(t.Context(), redistest.URL(t), redisstore.WithPrefix(redistest.Prefix(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		cfg := service.DefaultConfig()
		cfg.Keys = []service.Key{{ID: "suite", SecretSHA256: service.HashSecret("sk-suite"), Role: "admin", Projects: []string{"*"}}}
		cfg.ExpiryInterval = -1
		srv, err := service.New(st, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		s, err := New(Config{BaseURL: ts.URL, APIKey: "sk-suite", Cooldown: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.Items()
	})
}
