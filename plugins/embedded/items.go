package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// The namespaced store (core.ItemStore) lives in two buckets of the same
// file:
var (
	bItems     = []byte("items")     // core.ItemID → core.EncodeItemEntry: created ns (8) updated ns (8) value JSON
	bItemCount = []byte("itemcount") // core.NamespacePrefixID(ns) → uvarint items of exactly ns
)

// Items returns the store's namespaced store. It shares the file, the
// locking and the crash safety of the QA store.
func (s *Store) Items() core.ItemStore { return core.NewItemStore(&items{s: s}, s.scorer, s.cfg.clock) }

var (
	_ core.ItemsProvider = (*Store)(nil)
	_ core.ItemBackend   = (*items)(nil)
)

// items is the persistence of the namespaced store: each primitive is one
// bbolt transaction.
type items struct{ s *Store }

// addCount adds d to the count of the items of exactly ns.
func addCount(b *bolt.Bucket, ns core.Namespace, d int64) error {
	return addUvarints(b, []byte(core.NamespacePrefixID(ns)), true, d)
}

// getItem reads the item id, false when there is none.
func getItem(tx *bolt.Tx, id []byte) (core.Item, bool, error) {
	v := tx.Bucket(bItems).Get(id)
	if v == nil {
		return core.Item{}, false, nil
	}
	it, err := core.DecodeItemEntry(string(id), v)
	return it, err == nil, err
}

func (x *items) ItemError(_ context.Context, op string, err error) error {
	return fmt.Errorf("embedded: %s: %w", op, err)
}

// PutItem checks the count of the namespace (bItemCount) in the write's
// transaction.
func (x *items) PutItem(ctx context.Context, it core.Item, maxEntries int) (*core.Item, error) {
	id := []byte(core.ItemID(it.Namespace, it.Key))
	var prev *core.Item
	err := x.s.update(ctx, "put item", func(tx *bolt.Tx) error {
		prev = nil
		old, found, err := getItem(tx, id)
		if err != nil {
			return err
		}
		counts := tx.Bucket(bItemCount)
		stored := it
		if found {
			prev = &old
			stored.CreatedAt = old.CreatedAt
		} else {
			n, _ := binary.Uvarint(counts.Get([]byte(core.NamespacePrefixID(it.Namespace))))
			if maxEntries > 0 && int(n) >= maxEntries {
				return core.NamespaceFull(maxEntries)
			}
			if err := addCount(counts, it.Namespace, 1); err != nil {
				return err
			}
		}
		return tx.Bucket(bItems).Put(id, core.EncodeItemEntry(stored))
	})
	return prev, err
}

func (x *items) GetItem(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	var it core.Item
	var ok bool
	err := x.s.view(ctx, "get item", func(tx *bolt.Tx) (err error) {
		it, ok, err = getItem(tx, []byte(core.ItemID(ns, key)))
		return err
	})
	return it, ok, err
}

func (x *items) ScanItems(ctx context.Context, prefix core.Namespace, after string, n int) ([]core.Item, error) {
	var out []core.Item
	err := x.s.view(ctx, "scan items", func(tx *bolt.Tx) error {
		out = out[:0]
		p := []byte(core.NamespacePrefixID(prefix))
		start := p
		if after > string(p) {
			start = append([]byte(after), 0)
		}
		c := tx.Bucket(bItems).Cursor()
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, p) && len(out) < n; k, v = c.Next() {
			it, err := core.DecodeItemEntry(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

func (x *items) DeleteItem(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	id := []byte(core.ItemID(ns, key))
	var it core.Item
	var ok bool
	err := x.s.update(ctx, "delete item", func(tx *bolt.Tx) (err error) {
		if it, ok, err = getItem(tx, id); !ok {
			return err
		}
		if err := tx.Bucket(bItems).Delete(id); err != nil {
			return err
		}
		return addCount(tx.Bucket(bItemCount), ns, -1)
	})
	return it, ok, err
}

func (x *items) ClearItems(ctx context.Context, prefix core.Namespace) (int, error) {
	p := []byte(core.NamespacePrefixID(prefix))
	under := func(k []byte) bool { return bytes.HasPrefix(k, p) }
	var n int
	err := x.s.update(ctx, "clear items", func(tx *bolt.Tx) (err error) {
		if n, err = deleteFrom(tx.Bucket(bItems), p, math.MaxInt, under); err != nil {
			return err
		}
		_, err = deleteFrom(tx.Bucket(bItemCount), p, math.MaxInt, under)
		return err
	})
	return n, err
}
