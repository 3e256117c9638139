package redisstore

import (
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

func TestItemsConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore { return newShared(t).Items() })
}

// TestItemCorruptEntry: an entry too short to hold its times is an error
// of get and delete, not an item nor a missing one.
func TestItemCorruptEntry(t *testing.T) {
	s := newShared(t)
	x := &items{s: s}
	ns := core.Namespace{"user", "alice"}
	if err := s.rdb.HSet(t.Context(), x.h(tagOf(ns)), core.ItemID(ns, "k"), "short").Err(); err != nil {
		t.Fatal(err)
	}
	st := s.Items()
	if _, ok, err := st.Get(t.Context(), ns, "k"); err == nil || ok {
		t.Fatalf("get: %v, %v; want an error", ok, err)
	}
	if _, ok, err := st.Delete(t.Context(), ns, "k"); err == nil || ok {
		t.Fatalf("delete: %v, %v; want an error", ok, err)
	}
}
