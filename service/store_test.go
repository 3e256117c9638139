package service

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

func TestStoreRoutes(t *testing.T) {
	e := newEnv(t)
	put := map[string]any{"namespace": []string{"user", "agent-a"}, "key": "pref", "value": map[string]any{"text": "prefers table-driven tests"}}
	var res core.PutResult
	e.must(200, keyAgentA, "PUT", "/v1/store/items", put).decode(t, &res)
	if res.Item.Key != "pref" || res.Previous != nil || res.Item.CreatedAt.IsZero() {
		t.Fatalf("put: %+v", res)
	}
	r := e.must(200, keyAgentA, "GET", "/v1/store/items?namespace=user/agent-a&key=missing", nil)
	if strings.TrimSpace(string(r.body)) != `{"item":null}` {
		t.Errorf("get of a missing key: %s, want {\"item\":null}", r.body)
	}
	var got wire.ItemResponse
	e.must(200, keyAgentA, "GET", "/v1/store/items?namespace=user/agent-a&key=pref", nil).decode(t, &got)
	if got.Item == nil || string(got.Item.Value) != `{"text":"prefers table-driven tests"}` {
		t.Fatalf("get: %+v", got)
	}
	var page core.ItemPage
	e.must(200, keyAgentA, "GET", "/v1/store/list?prefix=user/agent-a&limit=1", nil).decode(t, &page)
	if len(page.Items) != 1 || page.NextCursor != "" {
		t.Errorf("list: %+v", page)
	}
	var sr wire.SearchItemsResponse
	e.must(200, keyAgentA, "POST", "/v1/store/search", map[string]any{"prefix": []string{"user", "agent-a"}, "query": "table driven"}).decode(t, &sr)
	if len(sr.Items) != 1 || sr.Items[0].Score <= 0 {
		t.Errorf("search: %+v", sr)
	}
	for _, bad := range []struct{ method, path string }{
		{"GET", "/v1/store/items?namespace=user/agent-a/&key=k"},
		{"GET", "/v1/store/items?namespace=user/agent-a&key="},
		{"GET", "/v1/store/list?prefix=user/agent-a&limit=x"},
		{"GET", "/v1/store/list?prefix=user/agent-a&cursor=zz!"},
	} {
		if r := e.must(400, keyAgentA, bad.method, bad.path, nil); r.apiErr(t).Code != "invalid_request" {
			t.Errorf("%s %s: %s", bad.method, bad.path, r.body)
		}
	}
	e.must(400, keyAgentA, "PUT", "/v1/store/items", map[string]any{"namespace": []string{"user", "agent-a"}, "key": "k", "value": []int{1}})
	e.must(400, keyAgentA, "PUT", "/v1/store/items", `{"namespace":["user","agent-a"],"key":"k","value":{`)
	var del wire.DeleteItemResponse
	e.must(200, keyAgentA, "DELETE", "/v1/store/items?namespace=user/agent-a&key=pref", nil).decode(t, &del)
	if !del.Deleted || del.Item == nil {
		t.Errorf("delete: %+v", del)
	}
	var clr wire.ClearItemsResponse
	e.must(200, keyAgentA, "POST", "/v1/store/clear", map[string]any{"prefix": []string{"user", "agent-a"}}).decode(t, &clr)
	if clr.Deleted != 0 {
		t.Errorf("clear: %+v", clr)
	}
}

// TestStorePolicy: [serve.store] limits answer 413 quota_exceeded naming
// the limit; a key's store_read/store_write patterns replace the defaults;
// every write and clear is in the audit log with who and before → after.
func TestStorePolicy(t *testing.T) {
	reader := Key{ID: "reader", Role: RoleAgent, Projects: []string{"a-*"}, StoreRead: []string{"project/a-*", "global"}, StoreWrite: []string{}}
	e := newEnv(t, withConfig(func(c *Config) {
		c.Store = StoreQuota{MaxEntriesPerNamespace: 2, MaxValueBytes: 40}
		c.Keys = append(c.Keys, withHash(reader)...)
	}))
	ns := []string{"project", "a-proj"}
	for _, k := range []string{"k1", "k2"} {
		e.must(200, keyAgentA, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": k, "value": map[string]any{"text": "x"}})
	}
	r := e.must(413, keyAgentA, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": "k3", "value": map[string]any{"text": "x"}})
	if ae := r.apiErr(t); ae.Code != "quota_exceeded" || !strings.Contains(ae.Message, "entries per namespace 2") {
		t.Errorf("entries quota: %+v", ae)
	}
	r = e.must(413, keyAgentA, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": "k1", "value": map[string]any{"text": strings.Repeat("x", 50)}})
	if ae := r.apiErr(t); ae.Code != "quota_exceeded" || !strings.Contains(ae.Message, "value bytes") {
		t.Errorf("value quota: %+v", ae)
	}
	e.must(200, keyAgentA, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": "k1", "value": map[string]any{"text": "y"}})
	e.must(200, reader, "GET", "/v1/store/list?prefix=project/a-proj", nil)
	if ae := e.must(403, reader, "PUT", "/v1/store/items", map[string]any{"namespace": ns, "key": "k9", "value": map[string]any{}}).apiErr(t); !strings.Contains(ae.Message, "access denied") {
		t.Errorf("reader put: %+v", ae)
	}
	e.must(403, reader, "GET", "/v1/store/list?prefix=user/reader", nil)
	e.must(200, keyAgentA, "DELETE", "/v1/store/items?namespace=project/a-proj&key=k2", nil)
	e.must(200, keyAgentA, "POST", "/v1/store/clear", map[string]any{"prefix": ns})

	var audit wire.AuditResponse
	e.must(200, keyAdmin, "GET", "/admin/v1/audit?project_id=a-proj", nil).decode(t, &audit)
	var got []string
	for _, en := range audit.Entries {
		if !strings.HasPrefix(en.Action, "store_") {
			continue
		}
		got = append(got, en.Action+" "+en.Key)
		if en.KeyID != "agent-a" || en.Namespace != "project/a-proj" || en.Time.IsZero() {
			t.Errorf("audit entry %+v: want who, where and when", en)
		}
		b, _ := json.Marshal(en)
		if strings.Contains(string(b), `"text"`) {
			t.Errorf("audit entry holds the value: %s", b)
		}
	}
	want := "store_put k1,store_put k2,store_put k1,store_delete k2,store_clear "
	if strings.Join(got, ",") != want {
		t.Errorf("audit = %v, want %s", got, want)
	}
	for _, en := range audit.Entries {
		if en.Action == "store_put" && en.Before != nil && en.After == nil {
			t.Errorf("overwrite without after: %+v", en)
		}
	}
}

// TestStoreWithoutItems: a store without a namespaced store answers 501.
func TestStoreWithoutItems(t *testing.T) {
	e := newEnvFor(t, errStore{})
	if r := e.must(501, keyAgentA, "GET", "/v1/store/list?prefix=user/agent-a", nil); r.apiErr(t).Code != "not_implemented" {
		t.Errorf("%s", r.body)
	}
}
