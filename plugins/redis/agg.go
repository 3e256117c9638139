package redisstore

import (
	"cmp"
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
// project's agg hash, and sorted sets for the lists and the expiring
// count (by trust and by expiry one per bucket of documents, so each
// stays a compact listpack: keys.byTrust). Every write of a QA record
// adds a "stat" operation to its commit (keepStats): the script takes the
// share the QA's last write left (kept in a share hash) out and puts the
// new one in, so the figures are the records as of their last write, like
// the embedded store's. Stats reads them in short commands only (each
// blocks every client of the server while it runs: keptStats).

// shareOf is a QA's share of its project's statistics as one write leaves
// it (core.AddCounts, core.ShareOf): the value of its field in the share
// hash, which commitScript's "stat" operation reads back to take it out
// again, and its by-trust score, the trust negated (empty when it is not
// ranked). Fields,
// separated by 0x1f, in this order (the sh constants), a zero count or an
// absent score empty and the empty ones at the end left out:
//
//   - the agg increments, from which the script names the agg fields
//     ("t" is always 1): status, level, trust bucket, and flags — "r"
//     ranked (in the by-trust set), "s" stale, "q" awaiting review
//     (counted as quarantined);
//   - the fields of the record trust.Model.Fill derives, so the lists show
//     the records as written: trust (empty when ranked: the by-trust score
//     holds it), alpha, beta, freshness, validation level, consecutive
//     fails;
//   - the other agg increments: shown, used, passes, fails;
//   - the expiry in ms (the by-expiry score, rounded up), the created_at
//     in ms negated when awaiting (the awaiting set's score), and the ns
//     the expiry was rounded up by.
func shareOf(rec core.Record) (share, trust string) {
	sh := core.ShareOf(rec)
	var f [shareFields]string
	f[shStatus], f[shLevel] = string(rec.Status), rec.Level
	f[shBucket] = strconv.Itoa(core.TrustBucket(rec.TrustScore))
	for i, n := range []int64{rec.UsageCount, rec.UseCount, rec.SuccessCount, rec.FailureCount} {
		f[shShown+i] = countText(n)
	}
	trust = strconv.FormatFloat(negated(rec.TrustScore), 'g', -1, 64)
	if sh.Ranked {
		f[shFlags] += "r"
	} else {
		f[shTrust], trust = strconv.FormatFloat(rec.TrustScore, 'g', -1, 64), ""
	}
	if rec.Status == core.StatusStale {
		f[shFlags] += "s"
	}
	if sh.Awaiting {
		f[shFlags] += "q"
		f[shCreated] = strconv.FormatInt(-sh.CreatedAt.UnixMilli(), 10)
	}
	if sh.Expires {
		ms := ttlMS(sh.ExpireAt)
		f[shExpiry] = strconv.FormatInt(ms, 10)
		f[shExpiryNS] = countText(ms*1e6 - sh.ExpireAt.UnixNano())
	}
	f[shAlpha] = strconv.FormatFloat(rec.Alpha, 'g', -1, 64)
	f[shBeta] = strconv.FormatFloat(rec.Beta, 'g', -1, 64)
	f[shFreshness] = strconv.FormatFloat(rec.Freshness, 'g', -1, 64)
	f[shValidation] = countText(int64(rec.ValidationLevel))
	f[shConsecutive] = countText(int64(rec.ConsecutiveFail))
	return strings.TrimRight(strings.Join(f[:], "\x1f"), "\x1f"), trust
}

// negated is -x, but 0 for 0 (a score of 0 is a listpack integer, -0
// a string; a trust of -0 would show as such).
func negated(x float64) float64 { return 0 - x }

// The fields of a share, in order (commitScript's "stat" operation reads
// the status, level, bucket, flags, counts and scores by position: keep
// them in step).
const (
	shStatus = iota
	shLevel
	shBucket
	shFlags
	shTrust
	shAlpha
	shBeta
	shFreshness
	shValidation
	shConsecutive
	shShown
	shUsed
	shPasses
	shFails
	shExpiry
	shCreated
	shExpiryNS
	shareFields
)

// countText is n in decimal, empty for 0.
func countText(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
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
// ranked is its by-trust score (its trust negated), when it has one.
func asWritten(st *stored, share string, ranked *float64) (core.Record, error) {
	r := st.record(true)
	f := strings.Split(share, "\x1f")
	if len(f) > shareFields || len(f) <= shFlags {
		return r, fmt.Errorf("statistics share of %s is corrupt", st.ID)
	}
	f = append(f, make([]string, shareFields-len(f))...)
	num := func(s string) (int64, error) {
		if s == "" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var errs [7]error
	var level, fails, ms, back int64
	switch {
	case !strings.Contains(f[shFlags], "r"):
		r.TrustScore, errs[0] = strconv.ParseFloat(f[shTrust], 64)
	case ranked != nil:
		r.TrustScore = negated(*ranked)
	default:
		errs[0] = errors.New("a ranked QA with no trust score")
	}
	r.Alpha, errs[1] = strconv.ParseFloat(f[shAlpha], 64)
	r.Beta, errs[2] = strconv.ParseFloat(f[shBeta], 64)
	r.Freshness, errs[3] = strconv.ParseFloat(f[shFreshness], 64)
	level, errs[4] = num(f[shValidation])
	fails, errs[5] = num(f[shConsecutive])
	if f[shExpiry] != "" {
		var err error
		ms, err = strconv.ParseInt(f[shExpiry], 10, 64)
		back, errs[6] = num(f[shExpiryNS])
		errs[6] = errors.Join(err, errs[6])
		r.TTLExpireAt = time.Unix(0, ms*1e6-back).UTC()
	}
	if err := errors.Join(errs[:]...); err != nil {
		return r, fmt.Errorf("statistics share of %s is corrupt: %w", st.ID, err)
	}
	r.ValidationLevel, r.ConsecutiveFail = int(level), int(fails)
	r.Level, r.Status = core.LevelName(r.ValidationLevel), core.Status(f[shStatus])
	return r, nil
}

// readCounts is the counts of an agg hash (the fields commitScript's
// "stat" operation names, keys.agg).
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
	share, trust := "", ""
	if rec != nil {
		share, trust = shareOf(*rec)
	}
	b.op("stat", s.k.shares(p, st.Doc), b.key(s.k.agg(p)), b.key(s.k.byTrust(p, st.Doc)), b.key(s.k.byExpiry(p, st.Doc)),
		b.key(s.k.awaiting(p)), st.ID, docField(st.Doc), share, trust)
}

// docField is a QA's field in its share bucket and its member in the
// by-expiry set: its document id in decimal.
func docField(doc uint64) string { return strconv.FormatUint(doc, 10) }

// keepRefreshed is keepStats of st refreshed at now with rep and the
// effects on it the write adds to the book.
func (s *Store) keepRefreshed(b *batch, st *stored, rep trust.Reputation, eff trust.Effects, now time.Time) {
	rec := s.refreshRecord(ledger.WithEffects(rep, st.State.Creator, eff), st, now, false)
	s.keepStats(b, st, &rec)
}

// aggBuilt is the agg hash field that holds statsLayout once the
// project's statistics hold every QA in this layout (buildStats).
const (
	aggBuilt    = "v"
	statsLayout = "5"
)

// markFresh marks the statistics of a project that has no QA yet (its
// first document ids were just reserved) as built: every QA it gets is
// written with its share.
func (s *Store) markFresh(ctx context.Context, p string) error {
	return s.rdb.HSetNX(ctx, s.k.agg(p), aggBuilt, statsLayout).Err()
}

// buildStats adds the share of every QA of p that has none (written
// before the store kept statistics) at now, then marks the statistics
// built. Each chunk commits under the version of its records and the
// absence of their shares, so a write racing the build (which adds its
// own share), or another process building them at the same time, never
// counts a QA twice: the chunk retries and skips the QAs that have one.
func (s *Store) buildStats(ctx context.Context, p string) error {
	all, err := s.entries(ctx, p)
	if err != nil {
		return err
	}
	now := s.now()
	for len(all) > 0 {
		chunk := all[:min(listChunk, len(all))]
		all = all[len(chunk):]
		if err := s.buildChunk(ctx, p, chunk, now); err != nil {
			return err
		}
	}
	if err := s.dropOldStats(ctx, p); err != nil {
		return err
	}
	return s.rdb.HSet(ctx, s.k.agg(p), aggBuilt, statsLayout).Err()
}

// dropOldStats deletes p's statistics in layouts 1 to 4
// (keys.oldStatsKeys), 512 keys a round trip; before the build marks
// layout 5 built, so a build stopped before this step does it again.
func (s *Store) dropOldStats(ctx context.Context, p string) error {
	seq, err := s.rdb.HGet(ctx, s.k.stats(p), "seq").Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	old := s.k.oldStatsKeys(p, seq)
	for len(old) > 0 {
		n := min(512, len(old))
		if err := s.rdb.Unlink(ctx, old[:n]...).Err(); err != nil {
			return err
		}
		old = old[n:]
	}
	return nil
}

// buildChunk adds the share of each QA of chunk that has none, in one
// write under the records' versions and the shares' absence.
func (s *Store) buildChunk(ctx context.Context, p string, chunk []listEntry, now time.Time) error {
	ids := make([]string, len(chunk))
	for i, e := range chunk {
		ids[i] = e.id
	}
	var ignored int
	return update(s, ctx, "build statistics", p, ids, s.k.event(p, "b", p, newID("agg_")), &ignored, func(w *write) (*int, error) {
		pipe := s.rdb.Pipeline()
		has := make([]*redis.BoolCmd, len(w.recs))
		for i, st := range w.recs {
			if st != nil { // (nil: deleted since)
				has[i] = pipe.HExists(ctx, s.k.shares(p, st.Doc), docField(st.Doc))
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
			w.b.absentField(s.k.shares(p, st.Doc), docField(st.Doc))
			s.keepRefreshed(w.b, st, rep, trust.Effects{}, now)
			n++
		}
		if n == 0 {
			return nil, nil
		}
		return &n, nil
	})
}

// keptStats reads the kept statistics; built is false (and the figures
// empty) when they do not hold every QA in this layout yet. Plain
// commands in a few round trips, each short whatever the project's size
// (the server serves other clients between them; a write racing the read
// is seen as before or after it, in each key): the counts, the document
// sequence, the awaiting set's first members and the days; then of every
// bucket its by-trust ends and its count of expiries up to
// core.ExpiryBound; then the first (last) members of the buckets whose
// first (last) members come first (last), among which are the top
// (worst) QAs: each of those buckets holds a member ahead of every member
// of a later bucket; then the listed records as written.
func (s *Store) keptStats(ctx context.Context, p string) (core.ProjectStats, bool, error) {
	pipe := s.rdb.Pipeline()
	aggCmd := pipe.HGetAll(ctx, s.k.agg(p))
	seqCmd := pipe.HGet(ctx, s.k.stats(p), "seq")
	awaiting := pipe.ZRange(ctx, s.k.awaiting(p), 0, core.StatsAwaiting-1)
	daysCmd := pipe.HGetAll(ctx, s.k.days(p))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return core.ProjectStats{}, false, err
	}
	if aggCmd.Val()[aggBuilt] != statsLayout {
		return core.ProjectStats{}, false, nil
	}
	last, err := seqCmd.Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return core.ProjectStats{}, false, err
	}
	bound := strconv.FormatInt(core.ExpiryBound(s.cfg.clock().UTC()).UnixMilli(), 10)
	pipe = s.rdb.Pipeline()
	var endCmds [2][]*redis.ZSliceCmd // each bucket's first member, and last
	var soon []*redis.IntCmd
	for b := uint64(0); b <= last/docBucket; b++ {
		for j := range endCmds {
			endCmds[j] = append(endCmds[j], pipe.ZRangeWithScores(ctx, s.k.byTrust(p, b*docBucket), int64(-j), int64(-j)))
		}
		soon = append(soon, pipe.ZCount(ctx, s.k.byExpiry(p, b*docBucket), "-inf", bound))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return core.ProjectStats{}, false, err
	}
	expiring := 0
	var ends [2][]redis.Z
	bucket := map[string]uint64{} // of each end's qa_id
	for b := range soon {
		expiring += int(soon[b].Val())
		for j := range endCmds {
			for _, z := range endCmds[j][b].Val() {
				ends[j] = append(ends[j], z)
				bucket[z.Member.(string)] = uint64(b)
			}
		}
	}
	pipe = s.rdb.Pipeline()
	var candCmds [2][]*redis.ZSliceCmd
	for j := range ends {
		for _, z := range firstOf(ends[j], core.StatsTop, j == 1) {
			from, to := int64(0), int64(core.StatsTop-1)
			if j == 1 {
				from, to = -core.StatsTop, -1
			}
			candCmds[j] = append(candCmds[j], pipe.ZRangeWithScores(ctx, s.k.byTrust(p, bucket[z.Member.(string)]*docBucket), from, to))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return core.ProjectStats{}, false, err
	}
	var lists [3][]string
	for j, cmds := range candCmds {
		var cands []redis.Z
		for _, c := range cmds {
			cands = append(cands, c.Val()...)
		}
		for _, z := range firstOf(cands, core.StatsTop, j == 1) {
			lists[j] = append(lists[j], z.Member.(string))
		}
	}
	lists[2] = awaiting.Val()
	var recs map[string]core.Record // (none without ids: an MGET needs a key)
	if ids := slices.Concat(lists[:]...); len(ids) > 0 {
		sts, err := s.readRecords(ctx, p, ids)
		if err != nil {
			return core.ProjectStats{}, false, err
		}
		if recs, err = s.asWrittenAll(ctx, p, sts); err != nil {
			return core.ProjectStats{}, false, err
		}
	}
	pick := func(ids []string) []core.Record {
		var out []core.Record
		for _, id := range ids {
			if r, ok := recs[id]; ok {
				out = append(out, r)
			}
		}
		return out
	}
	return core.FinishStats(p, readCounts(aggCmd.Val()), pick(lists[0]), pick(lists[1]), pick(lists[2]), expiring, dayCounts(daysCmd.Val())), true, nil
}

// firstOf is the n first of zs in their sorted set order (score, then
// member), or the n last (from the last) when last; it sorts zs.
func firstOf(zs []redis.Z, n int, last bool) []redis.Z {
	slices.SortFunc(zs, func(a, b redis.Z) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), strings.Compare(a.Member.(string), b.Member.(string)))
	})
	if last {
		slices.Reverse(zs)
	}
	return zs[:min(n, len(zs))]
}
