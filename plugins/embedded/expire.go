package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// runExpireBudget bounds the records a run's commit examines for expiry
// (expireSome): the embedded store has no expiry job of its own, so every
// run that records moves the sweep on, at a bounded cost.
const runExpireBudget = 64

// expireChunkKeys is how many list keys one transaction of Expire examines,
// so that the job over a large store holds the write lock a chunk at a time.
const expireChunkKeys = 1024

// expireSweep is the meta key of the expiry sweep: 8 bytes W (every record
// created at or before W, in ns, was examined once it was old enough to
// expire), 8 bytes C (the cutoff of the sweep in progress, 0 when none),
// then the bList key it resumes after.
var expireSweep = []byte("expire_sweep")

// Expire deprecates what the expiry job (ledger.Expire) expires among the
// QAs created at or before ledger.ExpiryCutoff (the only ones it may
// expire), at most batch of them (batch ≤ 0: all), in the list's order —
// project, then creation — and in transactions of expireChunkKeys list
// keys.
// On an error it returns how many the transactions committed before it
// deprecated (core.Expirer).
func (s *Store) Expire(ctx context.Context, now time.Time, batch int) (int, error) {
	cutoff := unixNS(s.ledger.ExpiryCutoff(now))
	n := 0
	var after []byte
	for {
		var expired int
		var last []byte
		var end bool
		err := s.update(ctx, "expire", func(tx *bolt.Tx) (err error) {
			expired, last, end, err = s.expireRange(tx, now, after, 0, cutoff, s.cfg.expireChunk, max(batch-n, 0))
			return err
		})
		if err != nil {
			return n, err
		}
		n += expired
		if end || (batch > 0 && n >= batch) {
			return n, nil
		}
		after = last
	}
}

// expireSome runs the expiry job (ledger.Expire) over the records created
// since the last sweep's cutoff and at least the candidate TTL ago — the
// ones that became old enough to expire — examining at most budget bList
// keys and resuming there next time. A never-validated candidate expires
// by age only, so a record examined once it was old enough needs no second
// look; in a store in use each call reads only what crossed the TTL since
// the previous one. It returns how many QAs it deprecated.
func (s *Store) expireSome(tx *bolt.Tx, now time.Time, budget int) (int, error) {
	meta := tx.Bucket(bMeta)
	v := meta.Get(expireSweep)
	var done, target uint64
	var resume []byte
	if len(v) >= 16 {
		done, target, resume = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), v[16:]
	}
	if target == 0 {
		cutoff := s.ledger.ExpiryCutoff(now).UnixNano()
		if cutoff <= 0 || uint64(cutoff) <= done {
			return 0, nil
		}
		target, resume = uint64(cutoff), nil
	}
	n, last, end, err := s.expireRange(tx, now, resume, done+1, target, budget, 0)
	if err != nil {
		return n, err
	}
	if end {
		// The sweep reached the end: everything up to target is examined.
		return n, meta.Put(expireSweep, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, target), 0))
	}
	val := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, done), target)
	return n, meta.Put(expireSweep, append(val, last...))
}

// expireRange runs the expiry job (ledger.Expire) over the records created
// from lo to hi (ns, inclusive), in the order of their bList keys from the
// one after the key after (nil: from the first), for at most keys steps of
// the cursor (a key examined, or a seek past the keys out of the range)
// and, when max is positive, until max QAs are deprecated. It returns how
// many it deprecated, the last key it stepped from, and whether it reached
// the end of the list.
func (s *Store) expireRange(tx *bolt.Tx, now time.Time, after []byte, lo, hi uint64, keys, max int) (n int, last []byte, end bool, err error) {
	c := tx.Bucket(bList).Cursor()
	k, _ := c.First()
	if len(after) > 0 {
		if k, _ = c.Seek(after); k != nil && bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	}
	for range keys {
		if k == nil {
			return n, last, true, nil
		}
		if max > 0 && n >= max {
			break
		}
		last = slices.Clone(k)
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) < i+9 {
			k, _ = c.Next()
			continue
		}
		switch created := binary.BigEndian.Uint64(k[i+1 : i+9]); {
		case created < lo: // examined by an earlier sweep
			k, _ = c.Seek(projectKey(string(k[:i]), lo, ""))
			continue
		case created > hi: // too young: the project's next records are younger still
			k, _ = c.Seek(append(slices.Clone(k[:i]), 1))
			continue
		}
		expired, err := s.expireOne(tx, string(k[i+9:]), now)
		if err != nil {
			return n, last, false, err
		}
		if expired {
			n++
		}
		k, _ = c.Next()
	}
	return n, last, false, nil
}

// expireOne runs the expiry job (ledger.Expire) on the QA qaID and stores
// the QA when it changed; it reports whether it did.
func (s *Store) expireOne(tx *bolt.Tx, qaID string, now time.Time) (bool, error) {
	st, err := getStored(tx, qaID)
	if err != nil || st == nil || !s.ledger.Expire(&st.Entry, reputation{tx}, now) {
		return false, err
	}
	return true, putStored(tx, st)
}
