package redisstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
)

// The namespaced store (core.ItemStore, docs/SCOPES.md). The items of a
// namespace live with those of every namespace sharing its first two
// segments (its tag: "user/alice", "project/acme", "global") under one
// hash tag, so every write is one Lua script on one cluster slot:
//
//	<prefix>:items:{<tag>}:z   sorted set of core.ItemIDs (score 0, lexical order)
//	<prefix>:items:{<tag>}:h   hash core.ItemID → core.EncodeItemEntry: created ns (8) updated ns (8) value JSON
//	<prefix>:items:tags        sorted set of the tags (score 0): lists and clears of
//	                           a prefix of fewer than two segments walk it
//
// <tag> is the base64url of core.NamespacePrefixID of the first two
// segments. A tag stays in the tag set once written (a put could race its
// removal); an empty tag costs a list of the root one round trip.

// Items returns the store's namespaced store, on the same client and
// prefix.
func (s *Store) Items() core.ItemStore { return core.NewItemStore(&items{s: s}, s.scorer, s.cfg.clock) }

var (
	_ core.ItemsProvider = (*Store)(nil)
	_ core.ItemBackend   = (*items)(nil)
)

// items is the persistence of the namespaced store: each write is one Lua
// script.
type items struct{ s *Store }

// tagOf is the tag (raw) of a namespace or of the namespace of an ItemID.
func tagOf(ns core.Namespace) string { return core.NamespacePrefixID(ns[:min(2, len(ns))]) }

func (x *items) z(tag string) string {
	return x.s.k.prefix + ":items:{" + base64.RawURLEncoding.EncodeToString([]byte(tag)) + "}:z"
}
func (x *items) h(tag string) string {
	return x.s.k.prefix + ":items:{" + base64.RawURLEncoding.EncodeToString([]byte(tag)) + "}:h"
}
func (x *items) tags() string { return x.s.k.prefix + ":items:tags" }

// putItemScript: KEYS z, h; ARGV id, created(8), updated(8)+value,
// max entries, count range min, count range max. Returns the previous
// entry, false when the key was new, or -1 when the namespace is full.
var putItemScript = redis.NewScript(`
local old = redis.call('HGET', KEYS[2], ARGV[1])
local created = ARGV[2]
if old then
  created = string.sub(old, 1, 8)
else
  local max = tonumber(ARGV[4])
  if max > 0 and redis.call('ZLEXCOUNT', KEYS[1], ARGV[5], ARGV[6]) >= max then
    return -1
  end
  redis.call('ZADD', KEYS[1], 0, ARGV[1])
end
redis.call('HSET', KEYS[2], ARGV[1], created .. ARGV[3])
return old
`)

// deleteItemScript: KEYS z, h; ARGV id. Returns the removed entry or false.
var deleteItemScript = redis.NewScript(`
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return old
`)

// clearItemsScript: KEYS z, h; ARGV range min, range max. Removes the
// range's items and returns how many.
var clearItemsScript = redis.NewScript(`
local n = 0
while true do
  local ids = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, 1000)
  if #ids == 0 then return n end
  redis.call('HDEL', KEYS[2], unpack(ids))
  redis.call('ZREM', KEYS[1], unpack(ids))
  n = n + #ids
end
`)

// ItemError keeps the errors of a request (ErrInvalid, a quota) as they
// are and makes the others ErrUnavailable (Store.wrap).
func (x *items) ItemError(ctx context.Context, op string, err error) error {
	var qe *core.QuotaError
	if errors.Is(err, core.ErrInvalid) || errors.As(err, &qe) {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	return x.s.wrap(ctx, op, err)
}

// PutItem checks the count of the namespace in the write's script.
func (x *items) PutItem(ctx context.Context, it core.Item, maxEntries int) (*core.Item, error) {
	const op = "put item"
	tag := tagOf(it.Namespace)
	if err := x.s.rdb.ZAdd(ctx, x.tags(), redis.Z{Member: tag}).Err(); err != nil {
		return nil, x.ItemError(ctx, op, err)
	}
	id := core.ItemID(it.Namespace, it.Key)
	entry := core.EncodeItemEntry(it)
	nsID := core.NamespacePrefixID(it.Namespace)
	v, err := putItemScript.Run(ctx, x.s.rdb, []string{x.z(tag), x.h(tag)},
		id, entry[:8], entry[8:], maxEntries, "["+nsID+"\x01", "("+nsID+"\x02").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, x.ItemError(ctx, op, err)
	}
	switch old := v.(type) {
	case int64:
		if old == -1 {
			return nil, x.ItemError(ctx, op, core.NamespaceFull(maxEntries))
		}
	case string:
		prev, err := core.DecodeItemEntry(id, []byte(old))
		if err != nil {
			return nil, x.ItemError(ctx, op, err)
		}
		return &prev, nil
	}
	return nil, nil
}

func (x *items) GetItem(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	id := core.ItemID(ns, key)
	v, err := x.s.rdb.HGet(ctx, x.h(tagOf(ns)), id).Result()
	return x.entry(ctx, "get item", id, v, err)
}

// entry is the item of the entry v of id that op read, false when there
// was none (redis.Nil).
func (x *items) entry(ctx context.Context, op, id, v string, err error) (core.Item, bool, error) {
	if errors.Is(err, redis.Nil) {
		return core.Item{}, false, nil
	}
	var it core.Item
	if err == nil {
		if it, err = core.DecodeItemEntry(id, []byte(v)); err == nil {
			return it, true, nil
		}
	}
	return core.Item{}, false, x.ItemError(ctx, op, err)
}

// prefixTags returns the tags holding the items under prefix (the tag of a
// prefix of two segments or more, else those starting with its
// NamespacePrefixID) from the tag of after on, in order.
func (x *items) prefixTags(ctx context.Context, prefix core.Namespace, after string) ([]string, error) {
	p := core.NamespacePrefixID(prefix)
	if len(prefix) >= 2 {
		return []string{tagOf(prefix)}, nil
	}
	start := "[" + p
	if after != "" {
		if ns, _, err := core.ParseItemID(after); err == nil && tagOf(ns) > p {
			start = "[" + tagOf(ns)
		}
	}
	return x.s.rdb.ZRangeByLex(ctx, x.tags(), &redis.ZRangeBy{Min: start, Max: "(" + p + "\xff"}).Result()
}

// ScanItems reads the tags in order, each by ranges of at most
// core.MaxItemListSize+1 ids and one HMGET of their entries.
func (x *items) ScanItems(ctx context.Context, prefix core.Namespace, after string, n int) ([]core.Item, error) {
	const op = "scan items"
	p := core.NamespacePrefixID(prefix)
	tags, err := x.prefixTags(ctx, prefix, after)
	if err != nil {
		return nil, x.ItemError(ctx, op, err)
	}
	var out []core.Item
	for _, tag := range tags {
		from := "[" + p
		if after != "" && after >= p {
			from = "(" + after
		}
		for len(out) < n {
			count := min(n-len(out), core.MaxItemListSize+1)
			ids, err := x.s.rdb.ZRangeByLex(ctx, x.z(tag), &redis.ZRangeBy{Min: from, Max: "(" + p + "\xff", Count: int64(count)}).Result()
			if err != nil {
				return nil, x.ItemError(ctx, op, err)
			}
			if len(ids) == 0 {
				break
			}
			vals, err := x.s.rdb.HMGet(ctx, x.h(tag), ids...).Result()
			if err != nil {
				return nil, x.ItemError(ctx, op, err)
			}
			for i, v := range vals {
				s, ok := v.(string)
				if !ok {
					continue // removed between the two reads
				}
				it, err := core.DecodeItemEntry(ids[i], []byte(s))
				if err != nil {
					return nil, x.ItemError(ctx, op, err)
				}
				out = append(out, it)
			}
			if len(ids) < count {
				break
			}
			from = "(" + ids[len(ids)-1]
		}
	}
	return out, nil
}

func (x *items) DeleteItem(ctx context.Context, ns core.Namespace, key string) (core.Item, bool, error) {
	tag := tagOf(ns)
	id := core.ItemID(ns, key)
	v, err := deleteItemScript.Run(ctx, x.s.rdb, []string{x.z(tag), x.h(tag)}, id).Text()
	return x.entry(ctx, "delete item", id, v, err)
}

// ClearItems removes the items under prefix: atomically when the prefix
// has two segments or more (one tag), else tag by tag.
func (x *items) ClearItems(ctx context.Context, prefix core.Namespace) (int, error) {
	const op = "clear items"
	tags, err := x.prefixTags(ctx, prefix, "")
	if err != nil {
		return 0, x.ItemError(ctx, op, err)
	}
	p := core.NamespacePrefixID(prefix)
	n := 0
	for _, tag := range tags {
		k, err := clearItemsScript.Run(ctx, x.s.rdb, []string{x.z(tag), x.h(tag)}, "["+p, "("+p+"\xff").Int()
		if err != nil {
			return n, x.ItemError(ctx, op, err)
		}
		n += k
	}
	return n, nil
}
