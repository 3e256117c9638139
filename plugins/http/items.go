package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// The namespaced store over a memex serve's /v1/store/… routes
// (docs/SCOPES.md). The server applies the key's policy; its errors come
// back as the same kinds (a *core.QuotaError for a quota).

// Items returns the remote namespaced store.
func (s *Store) Items() core.ItemStore { return &items{s: s} }

var (
	_ core.ItemsProvider = (*Store)(nil)
	_ core.ItemStore     = (*items)(nil)
)

type items struct{ s *Store }

// itemErr turns a quota answer back into a *core.QuotaError.
func itemErr(err error) error {
	var se *StatusError
	if !errors.As(err, &se) || se.Code != "quota_exceeded" {
		return err
	}
	qe := &core.QuotaError{}
	msg := strings.TrimPrefix(se.Message, "quota exceeded: ")
	if rest, ok := strings.CutPrefix(msg, "max "); ok {
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			return err
		}
		qe.Limit = rest[:i]
		qe.Max, _ = strconv.Atoi(rest[i+1:])
	} else if before, maxs, ok := strings.Cut(msg, " over max "); ok {
		i := strings.LastIndexByte(before, ' ')
		if i < 0 {
			return err
		}
		qe.Limit = before[:i]
		qe.Got, _ = strconv.Atoi(before[i+1:])
		qe.Max, _ = strconv.Atoi(maxs)
	} else {
		return err
	}
	return fmt.Errorf("http: %s: %w", se.Op, qe)
}

func decodeItemAnswer(op string, resp response, v any) error {
	if err := json.Unmarshal(resp.body, v); err != nil {
		return errUndecodable(op, resp.status, "not a JSON object")
	}
	return nil
}

func nsQuery(ns core.Namespace, key string) url.Values {
	return url.Values{"namespace": {ns.String()}, "key": {key}}
}

func (x *items) Put(ctx context.Context, req core.PutRequest) (core.PutResult, error) {
	const op = "put item"
	if err := req.Validate(); err != nil {
		return core.PutResult{}, invalid(op, err)
	}
	body, err := encode(op, req)
	if err != nil {
		return core.PutResult{}, err
	}
	resp, err := x.s.write(ctx, call{op: op, method: http.MethodPut, path: wire.RouteStoreItems, body: body, key: newKey()}, "")
	if err != nil {
		return core.PutResult{}, itemErr(err)
	}
	var res core.PutResult
	return res, decodeItemAnswer(op, resp, &res)
}

func (x *items) Get(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	const op = "get item"
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, invalid(op, err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, invalid(op, err)
	}
	resp, err := x.s.read(ctx, call{op: op, method: http.MethodGet, path: wire.RouteStoreItems, query: nsQuery(ns, key)})
	if err != nil {
		return core.Item{}, false, itemErr(err)
	}
	var v wire.ItemResponse
	if err := decodeItemAnswer(op, resp, &v); err != nil {
		return core.Item{}, false, err
	}
	if v.Item == nil {
		return core.Item{}, false, nil
	}
	return *v.Item, true, nil
}

func (x *items) List(ctx context.Context, req core.ListItemsRequest) (core.ItemPage, error) {
	const op = "list items"
	if err := req.Validate(); err != nil {
		return core.ItemPage{}, invalid(op, err)
	}
	q := url.Values{"prefix": {req.Prefix.String()}}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Cursor != "" {
		q.Set("cursor", req.Cursor)
	}
	resp, err := x.s.read(ctx, call{op: op, method: http.MethodGet, path: wire.RouteStoreList, query: q})
	if err != nil {
		return core.ItemPage{}, itemErr(err)
	}
	var page core.ItemPage
	if err := decodeItemAnswer(op, resp, &page); err != nil {
		return core.ItemPage{}, err
	}
	if page.Items == nil {
		page.Items = []core.Item{}
	}
	return page, nil
}

func (x *items) Search(ctx context.Context, req core.SearchItemsRequest) ([]core.Item, error) {
	const op = "search items"
	if err := req.Validate(); err != nil {
		return nil, invalid(op, err)
	}
	body, err := encode(op, req)
	if err != nil {
		return nil, err
	}
	resp, err := x.s.read(ctx, call{op: op, method: http.MethodPost, path: wire.RouteStoreSearch, body: body})
	if err != nil {
		return nil, itemErr(err)
	}
	var v wire.SearchItemsResponse
	if err := decodeItemAnswer(op, resp, &v); err != nil {
		return nil, err
	}
	return v.Items, nil
}

func (x *items) Delete(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	const op = "delete item"
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, invalid(op, err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, invalid(op, err)
	}
	resp, err := x.s.write(ctx, call{op: op, method: http.MethodDelete, path: wire.RouteStoreItems, query: nsQuery(ns, key), key: newKey()}, "")
	if err != nil {
		return core.Item{}, false, itemErr(err)
	}
	var v wire.DeleteItemResponse
	if err := decodeItemAnswer(op, resp, &v); err != nil {
		return core.Item{}, false, err
	}
	if !v.Deleted || v.Item == nil {
		return core.Item{}, false, nil
	}
	return *v.Item, true, nil
}

func (x *items) Clear(ctx context.Context, prefix core.Namespace) (int, error) {
	const op = "clear items"
	if err := prefix.Validate(); err != nil {
		return 0, invalid(op, err)
	}
	body, err := encode(op, wire.ClearItemsRequest{Prefix: prefix})
	if err != nil {
		return 0, err
	}
	resp, err := x.s.write(ctx, call{op: op, method: http.MethodPost, path: wire.RouteStoreClear, body: body, key: newKey()}, "")
	if err != nil {
		return 0, itemErr(err)
	}
	var v wire.ClearItemsResponse
	return v.Deleted, decodeItemAnswer(op, resp, &v)
}
