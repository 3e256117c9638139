package service

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// The namespaced store over HTTP (/v1/store/…, docs/SCOPES.md). Every
// request runs through core.GuardItems with the caller's policy (its
// store_read / store_write patterns, [serve.store] limits) and the
// server's audit log.

func (s *Server) storeRoutes(v1 *echo.Group) {
	v1.PUT("/store/items", s.putItem)
	v1.GET("/store/items", s.getItem)
	v1.DELETE("/store/items", s.deleteItem)
	v1.GET("/store/list", s.listItems)
	v1.POST("/store/search", s.searchItems)
	v1.POST("/store/clear", s.clearItems)
}

// policy is the caller's core.ItemPolicy.
func (s *Server) policy(k caller) core.ItemPolicy {
	p := core.ItemPolicy{MaxEntries: s.cfg.Store.MaxEntriesPerNamespace, MaxValueBytes: s.cfg.Store.MaxValueBytes}
	if k.admin && k.storeRead == nil && k.storeWrite == nil && (k.projects == nil || slices.Contains(k.projects, "*")) {
		return p // an admin of every project: every namespace
	}
	p.Read, p.Write = k.storeRead, k.storeWrite
	if p.Read == nil {
		p.Read = append(ownNamespaces(k), "global")
	}
	if p.Write == nil {
		p.Write = ownNamespaces(k)
		if k.admin {
			p.Write = append(p.Write, "global")
		}
	}
	return p
}

// ownNamespaces are the patterns an agent key reaches by default: its own
// user and conversations, and its projects.
func ownNamespaces(k caller) []string {
	out := []string{"user/" + k.id, "conversation/" + k.id}
	for _, p := range k.projects {
		out = append(out, "project/"+p)
	}
	return out
}

// items is the guarded store of the request, or a 501 when the server has
// no namespaced store.
func (s *Server) items(c echo.Context) (core.ItemStore, error) {
	if s.itemStore == nil {
		return nil, &notImplementedError{what: "the namespaced store"}
	}
	return core.GuardItems(s.itemStore, s.policy(callerOf(c)), s.auditor, s.now), nil
}

func (s *Server) putItem(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.PutRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	res, err := st.Put(ctx, req)
	if err != nil {
		return s.storeErr("store put", err)
	}
	return writeJSON(c, http.StatusOK, res)
}

// nsKey reads and validates ?namespace=a/b&key=k.
func nsKey(c echo.Context) (core.Namespace, string, error) {
	ns, err := core.ParseNamespace(c.QueryParam("namespace"))
	if err != nil {
		return nil, "", err
	}
	key := c.QueryParam("key")
	if err := core.ValidateItemKey(key); err != nil {
		return nil, "", err
	}
	return ns, key, nil
}

func (s *Server) getItem(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	ns, key, err := nsKey(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	it, ok, err := st.Get(ctx, ns, key)
	if err != nil {
		return s.storeErr("store get", err)
	}
	if !ok {
		return writeJSON(c, http.StatusOK, wire.ItemResponse{})
	}
	return writeJSON(c, http.StatusOK, wire.ItemResponse{Item: &it})
}

func (s *Server) deleteItem(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	ns, key, err := nsKey(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	it, ok, err := st.Delete(ctx, ns, key)
	if err != nil {
		return s.storeErr("store delete", err)
	}
	if !ok {
		return writeJSON(c, http.StatusOK, wire.DeleteItemResponse{})
	}
	return writeJSON(c, http.StatusOK, wire.DeleteItemResponse{Deleted: true, Item: &it})
}

func (s *Server) listItems(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	prefix, err := core.ParseNamespace(c.QueryParam("prefix"))
	if err != nil {
		return err
	}
	req := core.ListItemsRequest{Prefix: prefix, Cursor: c.QueryParam("cursor")}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return core.Invalid("limit", "must be a number")
		}
		req.Limit = n
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	page, err := st.List(ctx, req)
	if err != nil {
		return s.storeErr("store list", err)
	}
	return writeJSON(c, http.StatusOK, page)
}

func (s *Server) searchItems(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req core.SearchItemsRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	items, err := st.Search(ctx, req)
	if err != nil {
		return s.storeErr("store search", err)
	}
	if items == nil {
		items = []core.Item{}
	}
	return writeJSON(c, http.StatusOK, wire.SearchItemsResponse{Items: items})
}

func (s *Server) clearItems(c echo.Context) error {
	st, err := s.items(c)
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var req wire.ClearItemsRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	n, err := st.Clear(ctx, req.Prefix)
	if err != nil {
		return s.storeErr("store clear", err)
	}
	return writeJSON(c, http.StatusOK, wire.ClearItemsResponse{Deleted: n})
}
