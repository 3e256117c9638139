package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// The project statistics kept write by write (docs/REDIS.md), so Stats
// reads a few keys instead of every QA: the counts (core.AddCounts) in the
// project's agg hash, and three sorted sets for the lists and the expiring
// count. Every write of a QA record adds a "stat" operation to its commit
// (keepStats): the script takes the share the QA's last write left
// (kept in a share hash) out and puts the new one in, so the figures are
// the records as of their last write, like the embedded store's.

// shareOf is a QA's share of its project's statistics as one write leaves
// it (core.AddCounts, core.ShareOf): the value of its field in the share
// hash, which commitScript's "stat" operation reads back to take it out
// again. Fields, separated by 0x1f: the agg increments (field 0x1e count,
// …), the trust score (the by-trust set, ranked QAs), the expiry in ms
// (the by-expiry set), the created_at in ms (the awaiting set), and the
// fields of the record trust.Model.Fill derives (trust, alpha, beta,
// freshness, validation level, status, consecutive fails, expiry in ns)
// so the lists show the records as written.
func shareOf(rec core.Record) string {
	var c core.ProjectStats
	core.AddCounts(&c, rec, 1)
	var b strings.Builder
	for i, f := range countFields(c) {
		if i > 0 {
			b.WriteByte(0x1e)
		}
		b.WriteString(f.name)
		b.WriteByte(0x1e)
		b.WriteString(strconv.FormatInt(f.n, 10))
	}
	sh := core.ShareOf(rec)
	b.WriteByte(0x1f)
	if sh.Ranked {
		b.WriteString(strconv.FormatFloat(sh.Trust, 'g', -1, 64))
	}
	b.WriteByte(0x1f)
	if sh.Expires {
		b.WriteString(strconv.FormatInt(ttlMS(sh.ExpireAt), 10))
	}
	b.WriteByte(0x1f)
	if sh.Awaiting {
		b.WriteString(strconv.FormatInt(sh.CreatedAt.UnixMilli(), 10))
	}
	// The derived fields (trust.Model.Fill) as the write computed them.
	for _, f := range []string{
		strconv.FormatFloat(rec.TrustScore, 'g', -1, 64), strconv.FormatFloat(rec.Alpha, 'g', -1, 64),
		strconv.FormatFloat(rec.Beta, 'g', -1, 64), strconv.FormatFloat(rec.Freshness, 'g', -1, 64),
		strconv.Itoa(rec.ValidationLevel), string(rec.Status), strconv.Itoa(rec.ConsecutiveFail),
		strconv.FormatInt(ns(rec.TTLExpireAt), 10),
	} {
		b.WriteByte(0x1f)
		b.WriteString(f)
	}
	return b.String()
}

// ttlMS is an expiry's score in the by-expiry set: milliseconds, rounded
// up (the store's clock keeps milliseconds, so this is exact for its
// records).
func ttlMS(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// asWritten is st's record with the derived fields of its share: the
// record as its last write left it.
func asWritten(st *stored, share string) (core.Record, error) {
	r := st.record(true)
	f := strings.Split(share, "\x1f")
	if len(f) != 12 {
		return r, fmt.Errorf("statistics share of %s is corrupt", st.ID)
	}
	var errs [7]error
	r.TrustScore, errs[0] = strconv.ParseFloat(f[4], 64)
	r.Alpha, errs[1] = strconv.ParseFloat(f[5], 64)
	r.Beta, errs[2] = strconv.ParseFloat(f[6], 64)
	r.Freshness, errs[3] = strconv.ParseFloat(f[7], 64)
	r.ValidationLevel, errs[4] = strconv.Atoi(f[8])
	r.Level, r.Status = core.LevelName(r.ValidationLevel), core.Status(f[9])
	r.ConsecutiveFail, errs[5] = strconv.Atoi(f[10])
	x, err := strconv.ParseInt(f[11], 10, 64)
	errs[6] = err
	if err := errors.Join(errs[:]...); err != nil {
		return r, fmt.Errorf("statistics share of %s is corrupt: %w", st.ID, err)
	}
	if x != 0 {
		r.TTLExpireAt = time.Unix(0, x).UTC()
	}
	return r, nil
}

type countField struct {
	name string
	n    int64
}

// countFields are the agg hash fields of counts (the non-zero ones); readCounts
// is the reverse.
func countFields(c core.ProjectStats) []countField {
	out := []countField{{"t", int64(c.Total)}}
	for st, n := range c.ByStatus {
		out = append(out, countField{"s:" + string(st), int64(n)})
	}
	for l, n := range c.ByLevel {
		out = append(out, countField{"l:" + l, int64(n)})
	}
	for i, n := range c.TrustHistogram {
		out = append(out, countField{"h:" + strconv.Itoa(i), int64(n)})
	}
	out = append(out, countField{"sh", c.Shown}, countField{"us", c.Used}, countField{"pa", c.Passes},
		countField{"fa", c.Fails}, countField{"st", int64(c.Stale)}, countField{"qu", int64(c.Quarantined)})
	out = slices.DeleteFunc(out, func(f countField) bool { return f.n == 0 })
	slices.SortFunc(out, func(a, b countField) int { return strings.Compare(a.name, b.name) })
	return out
}

func readCounts(m map[string]string) core.ProjectStats {
	var c core.ProjectStats
	core.AddCounts(&c, core.Record{}, 0) // the maps and the histogram
	for f, v := range m {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n == 0 {
			continue
		}
		switch {
		case f == "t":
			c.Total = int(n)
		case f == "sh":
			c.Shown = n
		case f == "us":
			c.Used = n
		case f == "pa":
			c.Passes = n
		case f == "fa":
			c.Fails = n
		case f == "st":
			c.Stale = int(n)
		case f == "qu":
			c.Quarantined = int(n)
		case strings.HasPrefix(f, "s:"):
			c.ByStatus[core.Status(f[2:])] = int(n)
		case strings.HasPrefix(f, "l:"):
			c.ByLevel[f[2:]] = int(n)
		case strings.HasPrefix(f, "h:"):
			if i, err := strconv.Atoi(f[2:]); err == nil && i >= 0 && i < len(c.TrustHistogram) {
				c.TrustHistogram[i] = int(n)
			}
		}
	}
	return c
}

// keepStats adds to b the move of st's share of its project's statistics:
// the share of its last write out, rec's in (rec is st as this write
// leaves it, refreshed with the reputation the write read, its effects
// included, at the write's time; nil when the write deletes it).
func (s *Store) keepStats(b *batch, st *stored, rec *core.Record) {
	p := st.project
	share := ""
	if rec != nil {
		share = shareOf(*rec)
	}
	b.op("stat", s.k.shares(p, st.Doc), b.key(s.k.agg(p)), b.key(s.k.byTrust(p)), b.key(s.k.byExpiry(p)),
		b.key(s.k.awaiting(p)), st.ID, share)
}

// keepRefreshed is keepStats of st refreshed at now with rep and the
// effects on it the write adds to the book.
func (s *Store) keepRefreshed(b *batch, st *stored, rep trust.Reputation, eff trust.Effects, now time.Time) {
	rec := s.refreshRecord(ledger.WithEffects(rep, st.State.Creator, eff), st, now, false)
	s.keepStats(b, st, &rec)
}

// aggBuilt is the agg hash field set once the project's statistics hold
// every QA (buildStats); aggBuilding is the lock key's lifetime.
const (
	aggBuilt    = "v"
	aggBuilding = 10 * time.Minute
)

// markFresh marks the statistics of a project that has no QA yet (its
// first document ids were just reserved) as built: every QA it gets is
// written with its share.
func (s *Store) markFresh(ctx context.Context, p string) error {
	return s.rdb.HSetNX(ctx, s.k.agg(p), aggBuilt, "1").Err()
}

// unlockAggScript deletes the lock KEYS[1] if it still holds this
// builder's token ARGV[1] (a lock that outlived its lifetime may be
// another builder's by now).
var unlockAggScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)

// buildStats adds the share of every QA of p that has none (written
// before the store kept statistics) at now, then marks the statistics
// built. One builder at a time per project (a lock key with a lifetime);
// it reports false when another holds it. Each chunk commits under the
// version of its records and the absence of their shares, so a write
// racing the build (which adds its own share) is never counted twice.
func (s *Store) buildStats(ctx context.Context, p string) (bool, error) {
	token := newID("")
	ok, err := s.rdb.SetNX(ctx, s.k.aggLock(p), token, aggBuilding).Result()
	if err != nil || !ok {
		return false, err
	}
	// A lock release leaves behind only delays the next build until the
	// lock's lifetime ends.
	defer s.release(ctx, unlockAggScript, s.k.aggLock(p), token)
	all, err := s.entries(ctx, p)
	if err != nil {
		return false, err
	}
	now := s.now()
	for len(all) > 0 {
		chunk := all[:min(listChunk, len(all))]
		all = all[len(chunk):]
		if err := s.buildChunk(ctx, p, chunk, now); err != nil {
			return false, err
		}
	}
	return true, s.rdb.HSet(ctx, s.k.agg(p), aggBuilt, "1").Err()
}

// buildChunk adds the share of each QA of chunk that has none, in one
// write under the records' versions and the shares' absence.
func (s *Store) buildChunk(ctx context.Context, p string, chunk []listEntry, now time.Time) error {
	ids := make([]string, len(chunk))
	for i, e := range chunk {
		ids[i] = e.id
	}
	var ignored int
	return update(s, ctx, "build statistics", p, ids, nil, s.k.event(p, "b", p, newID("agg_")), &ignored, func(w *write) (*int, error) {
		pipe := s.rdb.Pipeline()
		has := make([]*redis.BoolCmd, len(w.recs))
		for i, st := range w.recs {
			if st != nil { // (nil: deleted since)
				has[i] = pipe.HExists(ctx, s.k.shares(p, st.Doc), st.ID)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		rep, err := w.reputation()
		if err != nil {
			return nil, err
		}
		n := 0
		for i, st := range w.recs {
			if st == nil || has[i].Val() {
				continue
			}
			w.b.version(s.k.qa(p, st.ID), st.ver)
			w.b.absentField(s.k.shares(p, st.Doc), st.ID)
			s.keepRefreshed(w.b, st, rep, trust.Effects{}, now)
			n++
		}
		if n == 0 {
			return nil, nil
		}
		return &n, nil
	})
}
