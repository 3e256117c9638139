package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
)

// The namespaced store (core.ItemStore) lives in two buckets of the same
// file, created by the first write:
var (
	bItems     = []byte("items")     // core.ItemID → created ns (8) updated ns (8) value JSON
	bItemCount = []byte("itemcount") // core.NamespacePrefixID(ns) → uvarint items of exactly ns
)

// Items returns the store's namespaced store. It shares the file, the
// locking and the crash safety of the QA store.
func (s *Store) Items() core.ItemStore { return &items{s: s} }

var (
	_ core.ItemsProvider = (*Store)(nil)
	_ core.ItemStore     = (*items)(nil)
)

type items struct{ s *Store }

func encodeItem(it core.Item) []byte {
	b := make([]byte, 16, 16+len(it.Value))
	binary.BigEndian.PutUint64(b[0:], uint64(it.CreatedAt.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(it.UpdatedAt.UnixNano()))
	return append(b, it.Value...)
}

func decodeItem(id, v []byte) (core.Item, error) {
	if len(v) < 16 {
		return core.Item{}, errors.New("corrupt item entry")
	}
	ns, key, err := core.ParseItemID(string(id))
	if err != nil {
		return core.Item{}, err
	}
	return core.Item{
		Namespace: ns,
		Key:       key,
		Value:     slices.Clone(v[16:]),
		CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v[0:]))).UTC(),
		UpdatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC(),
	}, nil
}

func addCount(b *bolt.Bucket, ns core.Namespace, d int) error {
	k := []byte(core.NamespacePrefixID(ns))
	n, _ := binary.Uvarint(b.Get(k))
	v := int64(n) + int64(d)
	if v <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, binary.AppendUvarint(nil, uint64(v)))
}

func (x *items) Put(ctx context.Context, req core.PutRequest) (core.PutResult, error) {
	const op = "put item"
	if err := ctx.Err(); err != nil {
		return core.PutResult{}, itemErr(op, err)
	}
	if err := req.Validate(); err != nil {
		return core.PutResult{}, itemErr(op, err)
	}
	id := []byte(core.ItemID(req.Namespace, req.Key))
	now := x.s.cfg.clock().UTC()
	var res core.PutResult
	err := x.s.update(ctx, op, func(tx *bolt.Tx) error {
		res = core.PutResult{}
		b, err := tx.CreateBucketIfNotExists(bItems)
		if err != nil {
			return err
		}
		counts, err := tx.CreateBucketIfNotExists(bItemCount)
		if err != nil {
			return err
		}
		it := core.Item{Namespace: req.Namespace, Key: req.Key, Value: req.Value, CreatedAt: now, UpdatedAt: now}
		if old := b.Get(id); old != nil {
			prev, err := decodeItem(id, old)
			if err != nil {
				return err
			}
			res.Previous = &prev
			it.CreatedAt = prev.CreatedAt
		} else {
			n, _ := binary.Uvarint(counts.Get([]byte(core.NamespacePrefixID(req.Namespace))))
			if req.MaxEntries > 0 && int(n) >= req.MaxEntries {
				return &core.QuotaError{Limit: "entries per namespace", Max: req.MaxEntries}
			}
			if err := addCount(counts, req.Namespace, 1); err != nil {
				return err
			}
		}
		res.Item = it
		return b.Put(id, encodeItem(it))
	})
	return res, err
}

func (x *items) Get(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	const op = "get item"
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	id := []byte(core.ItemID(ns, key))
	var it core.Item
	var ok bool
	err := x.s.view(ctx, op, func(tx *bolt.Tx) error {
		b := tx.Bucket(bItems)
		if b == nil {
			return nil
		}
		v := b.Get(id)
		if v == nil {
			return nil
		}
		var err error
		it, err = decodeItem(id, v)
		ok = err == nil
		return err
	})
	return it, ok, err
}

// scan calls fn with the items under prefix after the id after, in order,
// until fn returns false.
func scanItems(tx *bolt.Tx, prefix core.Namespace, after string, fn func(id []byte, v []byte) bool) {
	b := tx.Bucket(bItems)
	if b == nil {
		return
	}
	p := []byte(core.NamespacePrefixID(prefix))
	start := p
	if after > string(p) {
		start = append([]byte(after), 0)
	}
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if !fn(k, v) {
			return
		}
	}
}

func (x *items) List(ctx context.Context, req core.ListItemsRequest) (core.ItemPage, error) {
	const op = "list items"
	if err := req.Validate(); err != nil {
		return core.ItemPage{}, itemErr(op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.ItemPage{}, itemErr(op, err)
	}
	after, _ := core.DecodeItemCursor(req.Cursor)
	limit := core.ItemListLimit(req.Limit)
	var page core.ItemPage
	err := x.s.view(ctx, op, func(tx *bolt.Tx) error {
		page = core.ItemPage{Items: []core.Item{}}
		var last []byte
		var err error
		scanItems(tx, req.Prefix, after, func(id, v []byte) bool {
			if len(page.Items) == limit {
				page.NextCursor = core.EncodeItemCursor(string(last))
				return false
			}
			var it core.Item
			if it, err = decodeItem(id, v); err != nil {
				return false
			}
			page.Items = append(page.Items, it)
			last = id
			return true
		})
		return err
	})
	return page, err
}

func (x *items) Search(ctx context.Context, req core.SearchItemsRequest) ([]core.Item, error) {
	const op = "search items"
	if err := req.Validate(); err != nil {
		return nil, itemErr(op, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, itemErr(op, err)
	}
	var all []core.Item
	err := x.s.view(ctx, op, func(tx *bolt.Tx) error {
		all = all[:0]
		var err error
		scanItems(tx, req.Prefix, "", func(id, v []byte) bool {
			var it core.Item
			if it, err = decodeItem(id, v); err != nil {
				return false
			}
			all = append(all, it)
			return len(all) < core.MaxItemSearchScan
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out, err := retrieval.SearchItems(ctx, x.s.scorer, req, all)
	if err != nil {
		return nil, itemErr(op, err)
	}
	return out, nil
}

func (x *items) Delete(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	const op = "delete item"
	if err := ns.Validate(); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	if err := core.ValidateItemKey(key); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	if err := ctx.Err(); err != nil {
		return core.Item{}, false, itemErr(op, err)
	}
	id := []byte(core.ItemID(ns, key))
	var it core.Item
	var ok bool
	err := x.s.update(ctx, op, func(tx *bolt.Tx) error {
		ok = false
		b := tx.Bucket(bItems)
		if b == nil {
			return nil
		}
		v := b.Get(id)
		if v == nil {
			return nil
		}
		var err error
		if it, err = decodeItem(id, v); err != nil {
			return err
		}
		ok = true
		if err := b.Delete(id); err != nil {
			return err
		}
		counts, err := tx.CreateBucketIfNotExists(bItemCount)
		if err != nil {
			return err
		}
		return addCount(counts, ns, -1)
	})
	return it, ok, err
}

func (x *items) Clear(ctx context.Context, prefix core.Namespace) (int, error) {
	const op = "clear items"
	if err := prefix.Validate(); err != nil {
		return 0, itemErr(op, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, itemErr(op, err)
	}
	p := []byte(core.NamespacePrefixID(prefix))
	var n int
	err := x.s.update(ctx, op, func(tx *bolt.Tx) error {
		n = 0
		for _, name := range [][]byte{bItems, bItemCount} {
			b := tx.Bucket(name)
			if b == nil {
				continue
			}
			var del [][]byte
			c := b.Cursor()
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
				del = append(del, slices.Clone(k))
			}
			for _, k := range del {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			if bytes.Equal(name, bItems) {
				n = len(del)
			}
		}
		return nil
	})
	return n, err
}

func itemErr(op string, err error) error { return fmt.Errorf("embedded: %s: %w", op, err) }
