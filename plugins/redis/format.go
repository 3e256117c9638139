package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
)

// FormatVersion is the layout of the keys and values this package writes
// (docs/REDIS.md, "Format versions"). A store marked with a higher one was
// written by a newer memex and is refused rather than misread; a store
// without a mark, or with a lower one, holds layouts this package reads,
// and is marked with FormatVersion.
//
//	2  records leading with their binary fields, the qa_id index in
//	   1,024 buckets, short posting lists as bucket fields
const FormatVersion = 2

// FormatError refuses a store written in a newer format than this memex
// reads. It wraps core.ErrUnavailable: the store is out of this binary's
// reach until it is upgraded (a service answers 503, a client retries or
// spools).
type FormatError struct {
	Prefix string // the store's key prefix
	Found  int    // the store's format
	Reads  int    // the highest format this memex reads (FormatVersion)
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("redis store at %s is in format %d; this memex reads up to %d: upgrade memex", e.Prefix, e.Found, e.Reads)
}

// Unwrap is core.ErrUnavailable.
func (e *FormatError) Unwrap() error { return core.ErrUnavailable }

// formatScript marks the store with a format unless it holds a higher
// one: KEYS[1] the format key, ARGV[1] this package's FormatVersion.
// It returns the format the key holds afterwards (a value that is not a
// number is returned as it is, and left alone). One key, so it runs on
// any server of a cluster.
var formatScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and (tonumber(cur) == nil or tonumber(cur) >= tonumber(ARGV[1])) then return cur end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`)

// checkFormat refuses a store in a newer format than FormatVersion and
// marks one without a format, or with a lower one, with FormatVersion
// (formatScript: the compare and the write are one step, so processes
// starting together, or a process of an older version, never lower it).
// It reads the mark first and writes only when it must: a server restored
// from a snapshot taken before the mark existed is marked again at the
// next check (Open, Ping). Once a check has refused the store, every
// later write refuses it too (refusal).
func (s *Store) checkFormat(ctx context.Context) error {
	cur, err := s.rdb.Get(ctx, s.k.format()).Result()
	if errors.Is(err, redis.Nil) {
		cur = ""
	} else if err != nil {
		return s.wrap(ctx, "format", err)
	}
	if cur != strconv.Itoa(FormatVersion) {
		if cur, err = formatScript.Run(ctx, s.rdb, []string{s.k.format()}, FormatVersion).Text(); err != nil {
			return s.wrap(ctx, "format", err)
		}
	}
	found, err := strconv.Atoi(cur)
	if err != nil || found < 1 {
		return fmt.Errorf("redis: format: %w", core.Invalid("store", "%s holds %q, not a memex format version", s.k.format(), cur))
	}
	if found > FormatVersion {
		fe := &FormatError{Prefix: s.k.prefix, Found: found, Reads: FormatVersion}
		s.refused.Store(fe)
		return fe
	}
	s.refused.Store(nil) // a server restored from an older snapshot
	return nil
}

// refusal is the FormatError a check of this store has returned, or nil:
// writes refuse a store they know to be newer.
func (s *Store) refusal() error {
	if fe := s.refused.Load(); fe != nil {
		return fe
	}
	return nil
}
