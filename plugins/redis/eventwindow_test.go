package redisstore

import (
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// TestEventWindow runs the event window rule, aging the store's event
// keys: their lifetimes shrink by the time that passes, and a key whose
// lifetime ends is deleted, as Redis would expire it.
func TestEventWindow(t *testing.T) {
	coretest.RunEventWindow(t, func(t *testing.T) (core.MemoryPlugin, coretest.AgeFunc) {
		s := newShared(t)
		return s, func(t *testing.T, d time.Duration) { ageEvents(t, s, d) }
	})
}

func ageEvents(t *testing.T, s *Store, d time.Duration) {
	ctx := t.Context()
	n := 0
	iter := s.rdb.Scan(ctx, 0, s.k.prefix+":{*}:ev:*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		ttl, err := s.rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= d {
			err = s.rdb.Del(ctx, key).Err()
		} else {
			err = s.rdb.PExpire(ctx, key, ttl-d).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no event key to age")
	}
}
