package core

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"time"
)

// ItemBackend is what a store supplies to the namespaced store: the
// persistence primitives, each atomic in the store (a bbolt transaction, a
// Redis script, a lock). NewItemStore builds the ItemStore on them and is
// the one home of everything else: validation, cancellation, timestamps,
// paging with cursors, the search scan and its ranking.
//
// The front calls a primitive only with a valid namespace, prefix and key.
// A primitive's errors are returned as they are: the store wraps them,
// naming itself and the primitive.
type ItemBackend interface {
	// PutItem stores it under ItemID(it.Namespace, it.Key) and returns the
	// item it replaced (nil when the key was new). A replaced item's
	// CreatedAt is kept in what is stored. When the key is new, maxEntries
	// > 0 and the namespace already holds maxEntries items, it stores
	// nothing and returns NamespaceFull(maxEntries): the count is checked
	// in the same atomic step as the write.
	PutItem(ctx context.Context, it Item, maxEntries int) (*Item, error)
	// GetItem returns the item and true, or false when there is none.
	GetItem(ctx context.Context, ns Namespace, key string) (Item, bool, error)
	// ScanItems returns at most n items under prefix whose ItemID sorts
	// after the id after ("": from the first), in ItemID order.
	ScanItems(ctx context.Context, prefix Namespace, after string, n int) ([]Item, error)
	// DeleteItem removes the item and returns it; false when there was none.
	DeleteItem(ctx context.Context, ns Namespace, key string) (Item, bool, error)
	// ClearItems removes every item under prefix and returns how many.
	ClearItems(ctx context.Context, prefix Namespace) (int, error)
	// ItemError wraps an error the front found (a bad request, a cancelled
	// ctx, a failed ranking) for op ("put item", "list items", …) as the
	// store wraps its own.
	ItemError(ctx context.Context, op string, err error) error
}

// EncodeItemEntry is the stored form of an item, the value a store keeps
// under its ItemID: its created and updated times in Unix nanoseconds (8
// bytes each, big-endian), then its value.
func EncodeItemEntry(it Item) []byte {
	b := make([]byte, 16, 16+len(it.Value))
	binary.BigEndian.PutUint64(b[0:], uint64(it.CreatedAt.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(it.UpdatedAt.UnixNano()))
	return append(b, it.Value...)
}

// DecodeItemEntry is the item of the entry v (EncodeItemEntry) stored
// under id; its value is a copy.
func DecodeItemEntry(id string, v []byte) (Item, error) {
	if len(v) < 16 {
		return Item{}, errors.New("corrupt item entry")
	}
	ns, key, err := ParseItemID(id)
	if err != nil {
		return Item{}, err
	}
	return Item{
		Namespace: ns,
		Key:       key,
		Value:     slices.Clone(v[16:]),
		CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v[0:]))).UTC(),
		UpdatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC(),
	}, nil
}

// ItemSearcher answers a SearchItemsRequest over the items under its
// prefix, given in ItemID order: those that match the filter, ranked by
// relevance when there is a query (retrieval.Scorer is one).
type ItemSearcher interface {
	SearchItems(ctx context.Context, req SearchItemsRequest, items []Item) ([]Item, error)
}

// NamespaceFull is the error of a put of a new key into a namespace that
// holds max items already.
func NamespaceFull(max int) error { return &QuotaError{Limit: "entries per namespace", Max: max} }

// NewItemStore is the ItemStore over b: it checks each request and ctx,
// sets the timestamps of a put (now; nil means time.Now), pages List with
// cursors, and answers Search with s over the first MaxItemSearchScan
// items under the prefix.
func NewItemStore(b ItemBackend, s ItemSearcher, now func() time.Time) ItemStore {
	if now == nil {
		now = time.Now
	}
	return &backedItems{b: b, s: s, now: now}
}

type backedItems struct {
	b   ItemBackend
	s   ItemSearcher
	now func() time.Time
}

// check returns the store's error for op when the request is invalid
// (invalid non-nil) or ctx is done.
func (x *backedItems) check(ctx context.Context, op string, invalid error) error {
	if invalid != nil {
		return x.b.ItemError(ctx, op, invalid)
	}
	if err := ctx.Err(); err != nil {
		return x.b.ItemError(ctx, op, err)
	}
	return nil
}

// validItem is the error of a bad namespace or key, or nil.
func validItem(ns Namespace, key string) error {
	if err := ns.Validate(); err != nil {
		return err
	}
	return ValidateItemKey(key)
}

func (x *backedItems) Put(ctx context.Context, req PutRequest) (PutResult, error) {
	if err := x.check(ctx, "put item", req.Validate()); err != nil {
		return PutResult{}, err
	}
	now := x.now().UTC()
	it := Item{Namespace: req.Namespace, Key: req.Key, Value: req.Value, CreatedAt: now, UpdatedAt: now}
	prev, err := x.b.PutItem(ctx, it, req.MaxEntries)
	if err != nil {
		return PutResult{}, err
	}
	if prev != nil {
		it.CreatedAt = prev.CreatedAt
	}
	return PutResult{Item: it, Previous: prev}, nil
}

func (x *backedItems) Get(ctx context.Context, ns Namespace, key string) (Item, bool, error) {
	if err := x.check(ctx, "get item", validItem(ns, key)); err != nil {
		return Item{}, false, err
	}
	return x.b.GetItem(ctx, ns, key)
}

// List reads one item past the page: when it is there, the page's last
// item is where the next page starts.
func (x *backedItems) List(ctx context.Context, req ListItemsRequest) (ItemPage, error) {
	if err := x.check(ctx, "list items", req.Validate()); err != nil {
		return ItemPage{}, err
	}
	after, _ := DecodeItemCursor(req.Cursor)
	limit := ItemListLimit(req.Limit)
	got, err := x.b.ScanItems(ctx, req.Prefix, after, limit+1)
	if err != nil {
		return ItemPage{}, err
	}
	page := ItemPage{Items: got[:min(limit, len(got))]}
	if len(got) > limit {
		last := page.Items[limit-1]
		page.NextCursor = EncodeItemCursor(ItemID(last.Namespace, last.Key))
	}
	if page.Items == nil {
		page.Items = []Item{}
	}
	return page, nil
}

func (x *backedItems) Search(ctx context.Context, req SearchItemsRequest) ([]Item, error) {
	const op = "search items"
	if err := x.check(ctx, op, req.Validate()); err != nil {
		return nil, err
	}
	all, err := x.b.ScanItems(ctx, req.Prefix, "", MaxItemSearchScan)
	if err != nil {
		return nil, err
	}
	out, err := x.s.SearchItems(ctx, req, all)
	if err != nil {
		return nil, x.b.ItemError(ctx, op, err)
	}
	return out, nil
}

func (x *backedItems) Delete(ctx context.Context, ns Namespace, key string) (Item, bool, error) {
	if err := x.check(ctx, "delete item", validItem(ns, key)); err != nil {
		return Item{}, false, err
	}
	return x.b.DeleteItem(ctx, ns, key)
}

// Clear refuses the root: its prefix must be a valid namespace.
func (x *backedItems) Clear(ctx context.Context, prefix Namespace) (int, error) {
	if err := x.check(ctx, "clear items", prefix.Validate()); err != nil {
		return 0, err
	}
	return x.b.ClearItems(ctx, prefix)
}
