package inmem_test

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/plugins/inmem"
)

func TestConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore { return inmem.New() })
}

// TestListOrderAndPagination: for any set of items and any page size, paging
// through a prefix returns each item under it exactly once, in ItemID order.
func TestListOrderAndPagination(t *testing.T) {
	segs := []string{"a", "b", "ab", "a b", "é", "Z", "b-1"}
	f := func(seed int64, n uint8, pageSize uint8) bool {
		r := rand.New(rand.NewSource(seed))
		st := inmem.New()
		want := map[string]bool{}
		prefix := core.Namespace{segs[r.Intn(2)]}
		for range int(n%40) + 1 {
			ns := make(core.Namespace, 1+r.Intn(3))
			for i := range ns {
				ns[i] = segs[r.Intn(len(segs))]
			}
			key := segs[r.Intn(len(segs))] + "/" + segs[r.Intn(len(segs))]
			if _, err := st.Put(t.Context(), core.PutRequest{Namespace: ns, Key: key, Value: []byte(`{"v":1}`)}); err != nil {
				t.Log(err)
				return false
			}
			if ns.HasPrefix(prefix) {
				want[core.ItemID(ns, key)] = true
			}
		}
		var got []string
		cursor := ""
		for {
			page, err := st.List(t.Context(), core.ListItemsRequest{Prefix: prefix, Limit: int(pageSize%7) + 1, Cursor: cursor})
			if err != nil {
				t.Log(err)
				return false
			}
			for _, it := range page.Items {
				got = append(got, core.ItemID(it.Namespace, it.Key))
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if !slices.IsSorted(got) || len(got) != len(want) {
			t.Logf("got %q, want %d items", got, len(want))
			return false
		}
		for _, id := range got {
			if !want[id] || !strings.HasPrefix(id, core.NamespacePrefixID(prefix)) {
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}
