package coretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// ItemsFunc returns a new, empty namespaced store for one test; it
// registers its own cleanup with t.Cleanup.
type ItemsFunc func(t *testing.T) core.ItemStore

// RunItems is the conformance suite of core.ItemStore: it checks what the
// comments of core/item.go promise on every store (plugins/inmem,
// plugins/embedded, plugins/redis single and cluster, plugins/http against
// memex serve).
func RunItems(t *testing.T, newStore ItemsFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st core.ItemStore)
	}{
		{"Overwrite", testItemOverwrite},
		{"MissingGet", testItemMissingGet},
		{"ListPrefixCursor", testItemListPrefixCursor},
		{"ScanPastAPage", testItemScanPastAPage},
		{"SearchQuery", testItemSearchQuery},
		{"SearchNoQuery", testItemSearchNoQuery},
		{"SearchFunctionWords", testItemSearchFunctionWords},
		{"ClearPrefixOnly", testItemClearPrefixOnly},
		{"Delete", testItemDelete},
		{"ConcurrentPuts", testItemConcurrentPuts},
		{"NamespaceValidation", testItemNamespaceValidation},
		{"PolicyErrors", testItemPolicyErrors},
		{"Cancellation", testItemCancellation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func obj(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func put(t testing.TB, st core.ItemStore, ns core.Namespace, key string, v any) core.PutResult {
	t.Helper()
	res, err := st.Put(t.Context(), core.PutRequest{Namespace: ns, Key: key, Value: obj(t, v)})
	if err != nil {
		t.Fatalf("Put(%v, %q): %v", ns, key, err)
	}
	return res
}

func textOf(t testing.TB, it core.Item) string {
	t.Helper()
	var v struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(it.Value, &v); err != nil {
		t.Fatalf("value of %v/%s: %v", it.Namespace, it.Key, err)
	}
	return v.Text
}

func keysOf(items []core.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Namespace.String() + ":" + it.Key
	}
	return out
}

func testItemOverwrite(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"user", "alice"}
	first := put(t, st, ns, "theme", map[string]any{"text": "dark"})
	if first.Previous != nil {
		t.Fatalf("first Put: Previous = %+v, want nil", first.Previous)
	}
	if first.Item.CreatedAt.IsZero() || first.Item.UpdatedAt.Before(first.Item.CreatedAt) {
		t.Fatalf("first Put: created %v updated %v", first.Item.CreatedAt, first.Item.UpdatedAt)
	}
	second := put(t, st, ns, "theme", map[string]any{"text": "light", "n": 2})
	if second.Previous == nil || textOf(t, *second.Previous) != "dark" {
		t.Fatalf("second Put: Previous = %+v, want the dark item", second.Previous)
	}
	got, ok, err := st.Get(t.Context(), ns, "theme")
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if textOf(t, got) != "light" || string(got.Value) != `{"n":2,"text":"light"}` && string(got.Value) != `{"text":"light","n":2}` {
		t.Fatalf("Get value = %s, want the second put's", got.Value)
	}
	if !got.CreatedAt.Equal(first.Item.CreatedAt) {
		t.Errorf("created_at changed on overwrite: %v → %v", first.Item.CreatedAt, got.CreatedAt)
	}
	if got.UpdatedAt.Before(first.Item.UpdatedAt) {
		t.Errorf("updated_at went back: %v → %v", first.Item.UpdatedAt, got.UpdatedAt)
	}
	if !slices.Equal(got.Namespace, ns) || got.Key != "theme" {
		t.Errorf("Get = %v/%s", got.Namespace, got.Key)
	}
	page, err := st.List(t.Context(), core.ListItemsRequest{Prefix: ns})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("List after overwrite = %v, %v; want one item", keysOf(page.Items), err)
	}
}

func testItemMissingGet(t *testing.T, st core.ItemStore) {
	put(t, st, core.Namespace{"user", "alice"}, "k", map[string]any{"text": "x"})
	for _, tc := range []struct {
		ns  core.Namespace
		key string
	}{
		{core.Namespace{"user", "alice"}, "other"},
		{core.Namespace{"user", "bob"}, "k"},
		{core.Namespace{"user"}, "k"},
		{core.Namespace{"user", "alice", "x"}, "k"},
	} {
		it, ok, err := st.Get(t.Context(), tc.ns, tc.key)
		if err != nil || ok {
			t.Errorf("Get(%v, %q) = %+v, %v, %v; want not found and no error", tc.ns, tc.key, it, ok, err)
		}
	}
}

// listAll pages through prefix with page size n.
func listAll(t testing.TB, st core.ItemStore, prefix core.Namespace, n int) []core.Item {
	t.Helper()
	var out []core.Item
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("List(%v) does not end", prefix)
		}
		page, err := st.List(t.Context(), core.ListItemsRequest{Prefix: prefix, Limit: n, Cursor: cursor})
		if err != nil {
			t.Fatalf("List(%v, limit %d): %v", prefix, n, err)
		}
		if len(page.Items) > n {
			t.Fatalf("List(%v, limit %d) returned %d items", prefix, n, len(page.Items))
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

func testItemListPrefixCursor(t *testing.T, st core.ItemStore) {
	for i := range 5 {
		put(t, st, core.Namespace{"a", "b"}, fmt.Sprintf("k%d", i), map[string]any{"text": "x"})
	}
	put(t, st, core.Namespace{"a", "b", "c"}, "k", map[string]any{"text": "child"})
	put(t, st, core.Namespace{"a", "bc"}, "k", map[string]any{"text": "sibling"})
	put(t, st, core.Namespace{"a"}, "top", map[string]any{"text": "parent"})
	put(t, st, core.Namespace{"z"}, "k", map[string]any{"text": "other"})
	want := []string{"a/b:k0", "a/b:k1", "a/b:k2", "a/b:k3", "a/b:k4", "a/b/c:k"}
	for _, n := range []int{1, 2, 3, 6, 100} {
		if got := keysOf(listAll(t, st, core.Namespace{"a", "b"}, n)); !slices.Equal(got, want) {
			t.Errorf("List(a/b) in pages of %d = %v, want %v", n, got, want)
		}
	}
	all := keysOf(listAll(t, st, core.Namespace{}, 4))
	wantAll := []string{"a:top", "a/b:k0", "a/b:k1", "a/b:k2", "a/b:k3", "a/b:k4", "a/b/c:k", "a/bc:k", "z:k"}
	if !slices.Equal(all, wantAll) {
		t.Errorf("List(root) = %v, want %v", all, wantAll)
	}
	page, err := st.List(t.Context(), core.ListItemsRequest{Prefix: core.Namespace{"a", "b"}, Limit: 6})
	if err != nil || page.NextCursor != "" {
		t.Errorf("a page holding the rest: next_cursor = %q, %v; want none", page.NextCursor, err)
	}
	empty, err := st.List(t.Context(), core.ListItemsRequest{Prefix: core.Namespace{"nothing"}})
	if err != nil || len(empty.Items) != 0 || empty.Items == nil || empty.NextCursor != "" {
		t.Errorf("List(nothing) = %#v, %v; want an empty, non-nil page", empty, err)
	}
	if _, err := st.List(t.Context(), core.ListItemsRequest{Prefix: core.Namespace{"a"}, Cursor: "not a cursor!"}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("List with a bad cursor: %v, want ErrInvalid", err)
	}
}

func testItemSearchQuery(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"user", "alice"}
	put(t, st, ns, "pref-tests", map[string]any{"text": "prefers table-driven tests", "kind": "pref"})
	put(t, st, ns, "pref-tabs", map[string]any{"text": "indents with tabs", "kind": "pref"})
	put(t, st, ns, "fact-go", map[string]any{"text": "works on the Go parser", "kind": "fact"})
	put(t, st, core.Namespace{"user", "bob"}, "pref-tests", map[string]any{"text": "hates table-driven tests"})
	hits, err := st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "table driven tests"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Key != "pref-tests" || !slices.Equal(hits[0].Namespace, ns) {
		t.Fatalf("Search(table driven tests) = %v, want only alice's pref-tests", keysOf(hits))
	}
	if hits[0].Score <= 0 || hits[0].Score > 1 {
		t.Errorf("score = %v, want (0,1]", hits[0].Score)
	}
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "tabs tests", Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search limit 1 = %v, %v", keysOf(hits), err)
	}
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "tabs tests parser",
		Filter: map[string]json.RawMessage{"kind": json.RawMessage(`"fact"`)}})
	if err != nil || !slices.Equal(keysOf(hits), []string{"user/alice:fact-go"}) {
		t.Fatalf("Search with filter kind=fact = %v, %v", keysOf(hits), err)
	}
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "kubernetes"})
	if err != nil || len(hits) != 0 {
		t.Errorf("Search(no match) = %v, %v; want nothing", keysOf(hits), err)
	}
	// The field names of a value are not its text.
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "kind"})
	if err != nil || len(hits) != 0 {
		t.Errorf("Search(kind) = %v, %v; field names must not match", keysOf(hits), err)
	}
}

// testItemSearchFunctionWords: two items that match a query's indexed
// words alike are ordered by the function words the query shares with
// their keys ("how"), before their ItemID order.
func testItemSearchFunctionWords(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"project", "fw"}
	put(t, st, ns, "deploy-a", map[string]any{"text": "deploy"})
	put(t, st, ns, "deploy-how", map[string]any{"text": "deploy"})
	hits, err := st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "how to deploy"})
	if err != nil || !slices.Equal(keysOf(hits), []string{"project/fw:deploy-how", "project/fw:deploy-a"}) {
		t.Fatalf("Search(how to deploy) = %v, %v; want deploy-how (it says how) first", keysOf(hits), err)
	}
	if hits[0].Score <= hits[1].Score {
		t.Errorf("scores %v, %v: want the one sharing the query's function word above", hits[0].Score, hits[1].Score)
	}
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "deploy"})
	if err != nil || !slices.Equal(keysOf(hits), []string{"project/fw:deploy-a", "project/fw:deploy-how"}) || hits[0].Score != hits[1].Score {
		t.Fatalf("Search(deploy) = %v, %v; want a tie in ItemID order", keysOf(hits), err)
	}
}

// testItemScanPastAPage: a namespace of more items than a List page holds
// at most is read whole by List (a full page, then the rest) and by
// Search, whose scan goes past the first page's worth.
func testItemScanPastAPage(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"project", "big"}
	const n = core.MaxItemListSize + 2
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				v := obj(t, map[string]any{"text": "entry", "i": i})
				if _, err := st.Put(t.Context(), core.PutRequest{Namespace: ns, Key: fmt.Sprintf("k%04d", i), Value: v}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Put: %v", err)
	}
	page, err := st.List(t.Context(), core.ListItemsRequest{Prefix: ns, Limit: core.MaxItemListSize})
	if err != nil || len(page.Items) != core.MaxItemListSize || page.NextCursor == "" {
		t.Fatalf("List of a full page = %d items, next %q, %v; want %d and a cursor",
			len(page.Items), page.NextCursor, err, core.MaxItemListSize)
	}
	rest, err := st.List(t.Context(), core.ListItemsRequest{Prefix: ns, Limit: core.MaxItemListSize, Cursor: page.NextCursor})
	if err != nil || !slices.Equal(keysOf(rest.Items), []string{"project/big:k1000", "project/big:k1001"}) || rest.NextCursor != "" {
		t.Fatalf("List after a full page = %v, next %q, %v; want the last two", keysOf(rest.Items), rest.NextCursor, err)
	}
	last := map[string]json.RawMessage{"i": json.RawMessage(fmt.Sprint(n - 1))}
	hits, err := st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Filter: last})
	if err != nil || !slices.Equal(keysOf(hits), []string{"project/big:k1001"}) {
		t.Fatalf("Search for the last item = %v, %v", keysOf(hits), err)
	}
}

func testItemSearchNoQuery(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"project", "p1"}
	for _, k := range []string{"c", "a", "b"} {
		put(t, st, ns, k, map[string]any{"text": "entry " + k, "k": k})
	}
	put(t, st, core.Namespace{"project", "p2"}, "a", map[string]any{"text": "elsewhere"})
	hits, err := st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Limit: 2})
	if err != nil || !slices.Equal(keysOf(hits), []string{"project/p1:a", "project/p1:b"}) {
		t.Fatalf("Search without a query, limit 2 = %v, %v; want the first two in list order", keysOf(hits), err)
	}
	for _, it := range hits {
		if it.Score != 0 {
			t.Errorf("Search without a query: score %v, want 0", it.Score)
		}
	}
	hits, err = st.Search(t.Context(), core.SearchItemsRequest{Prefix: ns, Query: "   ", Filter: map[string]json.RawMessage{"k": json.RawMessage(`"c"`)}})
	if err != nil || !slices.Equal(keysOf(hits), []string{"project/p1:c"}) {
		t.Fatalf("Search with a blank query and a filter = %v, %v", keysOf(hits), err)
	}
}

func testItemClearPrefixOnly(t *testing.T, st core.ItemStore) {
	put(t, st, core.Namespace{"conversation", "alice", "s1"}, "k1", map[string]any{"text": "x"})
	put(t, st, core.Namespace{"conversation", "alice", "s1"}, "k2", map[string]any{"text": "x"})
	put(t, st, core.Namespace{"conversation", "alice", "s1", "sub"}, "k", map[string]any{"text": "x"})
	put(t, st, core.Namespace{"conversation", "alice", "s10"}, "k", map[string]any{"text": "x"})
	put(t, st, core.Namespace{"conversation", "alice"}, "k", map[string]any{"text": "x"})
	put(t, st, core.Namespace{"user", "alice"}, "k", map[string]any{"text": "x"})
	n, err := st.Clear(t.Context(), core.Namespace{"conversation", "alice", "s1"})
	if err != nil || n != 3 {
		t.Fatalf("Clear(conversation/alice/s1) = %d, %v; want 3", n, err)
	}
	want := []string{"conversation/alice:k", "conversation/alice/s10:k", "user/alice:k"}
	if got := keysOf(listAll(t, st, core.Namespace{}, 10)); !slices.Equal(got, want) {
		t.Errorf("after Clear: %v, want %v", got, want)
	}
	if n, err := st.Clear(t.Context(), core.Namespace{"conversation", "alice", "s1"}); err != nil || n != 0 {
		t.Errorf("second Clear = %d, %v; want 0", n, err)
	}
	if _, err := st.Clear(t.Context(), core.Namespace{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Clear(root) = %v, want ErrInvalid", err)
	}
}

func testItemDelete(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"user", "alice"}
	put(t, st, ns, "k", map[string]any{"text": "gone"})
	put(t, st, ns, "k2", map[string]any{"text": "stays"})
	it, ok, err := st.Delete(t.Context(), ns, "k")
	if err != nil || !ok || textOf(t, it) != "gone" {
		t.Fatalf("Delete = %+v, %v, %v", it, ok, err)
	}
	if _, ok, err := st.Get(t.Context(), ns, "k"); ok || err != nil {
		t.Errorf("Get after Delete = %v, %v", ok, err)
	}
	if _, ok, err := st.Delete(t.Context(), ns, "k"); ok || err != nil {
		t.Errorf("second Delete = %v, %v; want false, nil", ok, err)
	}
	if got := keysOf(listAll(t, st, ns, 10)); !slices.Equal(got, []string{"user/alice:k2"}) {
		t.Errorf("List after Delete = %v", got)
	}
}

func testItemConcurrentPuts(t *testing.T, st core.ItemStore) {
	ns := core.Namespace{"user", "alice"}
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every value is whole only if all its fields come from one put.
			v := map[string]any{"w": w, "text": strings.Repeat(fmt.Sprintf("w%d ", w), 200)}
			for range 5 {
				if _, err := st.Put(t.Context(), core.PutRequest{Namespace: ns, Key: "k", Value: obj(t, v)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Put: %v", err)
	}
	got, ok, err := st.Get(t.Context(), ns, "k")
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	var v struct {
		W    int    `json:"w"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(got.Value, &v); err != nil {
		t.Fatalf("stored value is not JSON: %v", err)
	}
	if v.Text != strings.Repeat(fmt.Sprintf("w%d ", v.W), 200) {
		t.Fatalf("torn value: w=%d with another writer's text", v.W)
	}
	last := put(t, st, ns, "k", map[string]any{"text": "last"})
	got, _, _ = st.Get(t.Context(), ns, "k")
	if textOf(t, got) != "last" || !got.UpdatedAt.Equal(last.Item.UpdatedAt) {
		t.Errorf("after a final Put: %s, want the last writer's value", got.Value)
	}
	if page, _ := st.List(t.Context(), core.ListItemsRequest{Prefix: ns}); len(page.Items) != 1 {
		t.Errorf("one key written concurrently is %d items", len(page.Items))
	}
}

func testItemNamespaceValidation(t *testing.T, st core.ItemStore) {
	good := obj(t, map[string]any{"text": "x"})
	bad := []struct {
		name string
		req  core.PutRequest
	}{
		{"no namespace", core.PutRequest{Key: "k", Value: good}},
		{"separator in a segment", core.PutRequest{Namespace: core.Namespace{"user", "alice/../bob"}, Key: "k", Value: good}},
		{"empty segment", core.PutRequest{Namespace: core.Namespace{"user", ""}, Key: "k", Value: good}},
		{"NUL in a segment", core.PutRequest{Namespace: core.Namespace{"user", "a\x00b"}, Key: "k", Value: good}},
		{"control character in a segment", core.PutRequest{Namespace: core.Namespace{"user\x01"}, Key: "k", Value: good}},
		{"dot-dot segment", core.PutRequest{Namespace: core.Namespace{"user", ".."}, Key: "k", Value: good}},
		{"too deep", core.PutRequest{Namespace: core.Namespace{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, Key: "k", Value: good}},
		{"long segment", core.PutRequest{Namespace: core.Namespace{strings.Repeat("x", core.MaxSegmentBytes+1)}, Key: "k", Value: good}},
		{"invalid UTF-8", core.PutRequest{Namespace: core.Namespace{"\xff"}, Key: "k", Value: good}},
		{"empty key", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Value: good}},
		{"NUL in the key", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "a\x00b", Value: good}},
		{"array value", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "k", Value: json.RawMessage(`[1]`)}},
		{"string value", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "k", Value: json.RawMessage(`"x"`)}},
		{"broken JSON", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "k", Value: json.RawMessage(`{"a":`)}},
		{"no value", core.PutRequest{Namespace: core.Namespace{"user", "alice"}, Key: "k"}},
	}
	for _, tc := range bad {
		if _, err := st.Put(t.Context(), tc.req); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Put with %s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, _, err := st.Get(t.Context(), core.Namespace{"user", "a/b"}, "k"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Get with a separator: %v, want ErrInvalid", err)
	}
	if _, err := st.List(t.Context(), core.ListItemsRequest{Prefix: core.Namespace{"a\x00"}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("List with NUL: %v, want ErrInvalid", err)
	}
	if _, err := st.Search(t.Context(), core.SearchItemsRequest{Prefix: core.Namespace{"a/"}}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Search with a separator: %v, want ErrInvalid", err)
	}
	if _, err := st.Clear(t.Context(), core.Namespace{"user", "x/y"}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Clear with a separator: %v, want ErrInvalid", err)
	}
	if _, err := st.List(t.Context(), core.ListItemsRequest{Limit: core.MaxItemListSize + 1}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("List over the limit: %v, want ErrInvalid", err)
	}
	// Nothing was stored, and look-alike namespaces stay apart.
	if got := listAll(t, st, core.Namespace{}, 10); len(got) != 0 {
		t.Fatalf("rejected puts stored %v", keysOf(got))
	}
	put(t, st, core.Namespace{"a", "b"}, "c", map[string]any{"text": "1"})
	put(t, st, core.Namespace{"a"}, "b/c", map[string]any{"text": "2"})
	put(t, st, core.Namespace{"a", "b", "c"}, "k", map[string]any{"text": "3"})
	if it, ok, _ := st.Get(t.Context(), core.Namespace{"a", "b"}, "c"); !ok || textOf(t, it) != "1" {
		t.Errorf("a/b:c = %s", it.Value)
	}
	if it, ok, _ := st.Get(t.Context(), core.Namespace{"a"}, "b/c"); !ok || textOf(t, it) != "2" {
		t.Errorf("a:b/c = %s", it.Value)
	}
	if got := keysOf(listAll(t, st, core.Namespace{"a", "b", "c"}, 10)); !slices.Equal(got, []string{"a/b/c:k"}) {
		t.Errorf("List(a/b/c) = %v", got)
	}
}

func testItemPolicyErrors(t *testing.T, st core.ItemStore) {
	audit := &memAudit{}
	g := core.GuardItems(st, core.ItemPolicy{
		Read:          []string{"user/alice", "project/acme-*"},
		Write:         []string{"user/alice"},
		MaxEntries:    2,
		MaxValueBytes: 64,
	}, audit, nil)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "key-alice"})
	alice := core.Namespace{"user", "alice"}
	v := obj(t, map[string]any{"text": "x"})
	for _, k := range []string{"k1", "k2"} {
		if _, err := g.Put(ctx, core.PutRequest{Namespace: alice, Key: k, Value: v}); err != nil {
			t.Fatalf("Put %s: %v", k, err)
		}
	}
	_, err := g.Put(ctx, core.PutRequest{Namespace: alice, Key: "k3", Value: v})
	var qe *core.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, core.ErrTooLarge) || !strings.Contains(err.Error(), "entries per namespace") {
		t.Fatalf("third entry: %v, want a quota error naming the entries limit", err)
	}
	if _, err := g.Put(ctx, core.PutRequest{Namespace: alice, Key: "k1", Value: obj(t, map[string]any{"text": "y"})}); err != nil {
		t.Errorf("overwrite at the entry limit: %v", err)
	}
	if _, err := g.Put(ctx, core.PutRequest{Namespace: core.Namespace{"user", "alice", "sub"}, Key: "k", Value: v}); err != nil {
		t.Errorf("a child namespace has its own count: %v", err)
	}
	_, err = g.Put(ctx, core.PutRequest{Namespace: alice, Key: "k1", Value: obj(t, map[string]any{"text": strings.Repeat("x", 100)})})
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "value bytes") {
		t.Errorf("large value: %v, want a quota error naming value bytes", err)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"write user/bob", func() error {
			_, err := g.Put(ctx, core.PutRequest{Namespace: core.Namespace{"user", "bob"}, Key: "k", Value: v})
			return err
		}()},
		{"write user (a parent)", func() error { _, err := g.Clear(ctx, core.Namespace{"user"}); return err }()},
		{"read user/bob", func() error { _, _, err := g.Get(ctx, core.Namespace{"user", "bob"}, "k"); return err }()},
		{"list user", func() error { _, err := g.List(ctx, core.ListItemsRequest{Prefix: core.Namespace{"user"}}); return err }()},
		{"list root", func() error { _, err := g.List(ctx, core.ListItemsRequest{}); return err }()},
		{"search project/other", func() error {
			_, err := g.Search(ctx, core.SearchItemsRequest{Prefix: core.Namespace{"project", "other"}})
			return err
		}()},
		{"write project/acme-1 (read only)", func() error {
			_, _, err := g.Delete(ctx, core.Namespace{"project", "acme-1"}, "k")
			return err
		}()},
	} {
		if !errors.Is(tc.err, core.ErrForbidden) || !strings.Contains(tc.err.Error(), "access denied") {
			t.Errorf("%s: %v, want access denied", tc.name, tc.err)
		}
	}
	if _, err := g.Search(ctx, core.SearchItemsRequest{Prefix: core.Namespace{"project", "acme-1"}}); err != nil {
		t.Errorf("search project/acme-1: %v", err)
	}
	if _, err := g.Clear(ctx, alice); err != nil {
		t.Errorf("clear user/alice: %v", err)
	}
	// Every write and clear is in the audit log, with who and before → after.
	actions := audit.actions()
	want := []string{"store_put k1", "store_put k2", "store_put k1", "store_put k", "store_clear "}
	if !slices.Equal(actions, want) {
		t.Errorf("audit = %v, want %v", actions, want)
	}
	for _, e := range audit.entries {
		if e.KeyID != "key-alice" || e.Time.IsZero() || e.Namespace == "" {
			t.Errorf("audit entry %+v: want who, when and the namespace", e)
		}
	}
	if e := audit.entries[2]; e.Before == nil || e.After == nil {
		t.Errorf("overwrite audit: before %v after %v, want both", e.Before, e.After)
	}
}

// memAudit is an in-memory core.Auditor for the policy test.
type memAudit struct {
	mu      sync.Mutex
	entries []core.AuditEntry
}

func (a *memAudit) AppendAudit(_ context.Context, e core.AuditEntry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	return nil
}

func (a *memAudit) Audit(context.Context, string, time.Time, int) ([]core.AuditEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.entries), nil
}

func (a *memAudit) actions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, len(a.entries))
	for i, e := range a.entries {
		out[i] = e.Action + " " + e.Key
	}
	return out
}

func testItemCancellation(t *testing.T, st core.ItemStore) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ns := core.Namespace{"user", "alice"}
	v := obj(t, map[string]any{"text": "x"})
	checks := map[string]error{}
	_, checks["Put"] = st.Put(ctx, core.PutRequest{Namespace: ns, Key: "k", Value: v})
	_, _, checks["Get"] = st.Get(ctx, ns, "k")
	_, checks["List"] = st.List(ctx, core.ListItemsRequest{Prefix: ns})
	_, checks["Search"] = st.Search(ctx, core.SearchItemsRequest{Prefix: ns, Query: "x"})
	_, _, checks["Delete"] = st.Delete(ctx, ns, "k")
	_, checks["Clear"] = st.Clear(ctx, ns)
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}
