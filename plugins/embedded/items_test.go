package embedded

import (
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

func TestItemsConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore { return newTestStore(t).Items() })
}

func TestItemsConformanceKeepOpen(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore { return newTestStore(t, WithKeepOpen()).Items() })
}

// TestItemsSurviveReopen: items are in the file, not in the process.
func TestItemsSurviveReopen(t *testing.T) {
	s := newTestStore(t)
	ns := core.Namespace{"user", "alice"}
	if _, err := s.Items().Put(t.Context(), core.PutRequest{Namespace: ns, Key: "k", Value: []byte(`{"text":"kept"}`)}); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	it, ok, err := s2.Items().Get(t.Context(), ns, "k")
	if err != nil || !ok || string(it.Value) != `{"text":"kept"}` {
		t.Fatalf("after reopen: %s, %v, %v", it.Value, ok, err)
	}
}
