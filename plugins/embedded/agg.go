package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// The project statistics kept write by write (docs/STORAGE.md), so Stats
// reads a few keys instead of every QA: the counts (core.AddCounts) and
// three small indexes for the lists and the expiring count. Every QA
// entry is written by putStored and removed by unindex; both update them
// in the same transaction (statsAdd, statsReplace), from the records as
// written. The trust and awaiting indexes hold their keys in the order
// of ProjectStats' lists (core.FinishStats), so Top is the first keys of
// a project, Worst its last, AwaitingReview its first.
var (
	bAgg     = []byte("agg")       // project → JSON counts (core.ProjectStats, counts only)
	bByTrust = []byte("trustrank") // project 0 ^trust (float64 bits) qa_id → nil: live QAs
	bByTTL   = []byte("byttl")     // project 0 expiry (unix ns) qa_id → nil: QAs with an expiry
	bWaiting = []byte("awaiting")  // project 0 ^created_at (unix ns) qa_id → nil: live quarantined QAs

	aggBuckets = [][]byte{bAgg, bByTrust, bByTTL, bWaiting}
	// oldAggBuckets are the trust and awaiting indexes in the older
	// order (trust and created_at ascending): a file that has them
	// gets the statistics built again (startStatsBuild).
	oldAggBuckets = [][]byte{[]byte("bytrust"), []byte("quarantine")}
)

// trustBits orders trust scores as uint64s: NaN and negatives first.
func trustBits(t float64) uint64 {
	if !(t > 0) {
		return 0
	}
	return math.Float64bits(t)
}

// keyStatsBuild (meta bucket) is the doc id the build of the statistics
// has reached while one is in progress (buildStatsStep): the entries
// below it are counted, those at or past it are not yet. The key is
// absent once every entry is counted.
var keyStatsBuild = []byte("stats_build")

// Work bounds of the statistics build (docs/STORAGE.md): each step is
// part of a transaction that has other work to do (an open, a write), so
// it stops at buildStepEntries entries or buildStepTime, whichever comes
// first; each chunk is a transaction of its own that Stats commits until
// the build is complete.
const (
	buildStepEntries  = 256
	buildStepTime     = 5 * time.Millisecond
	buildChunkEntries = 4096
)

// statsBuilding reports whether the statistics are being built, and the
// doc id the build has reached.
func statsBuilding(tx *bolt.Tx) (uint64, bool) {
	v := tx.Bucket(bMeta).Get(keyStatsBuild)
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// statsCounted reports whether the entry under doc has its share in the
// kept statistics (and so a write must move it): always once they are
// built, only below the build's cursor while it runs, never without the
// buckets (an upgrade from schema 1 before it creates them).
func statsCounted(tx *bolt.Tx, doc uint64) bool {
	if tx.Bucket(bByTrust) == nil {
		return false
	}
	cursor, building := statsBuilding(tx)
	return !building || doc < cursor
}

// statsAdd adds sign times the share of rec, the entry under doc, to its
// project's statistics, when that entry is counted (statsCounted).
func statsAdd(tx *bolt.Tx, doc uint64, rec core.Record, sign int) error {
	if !statsCounted(tx, doc) {
		return nil
	}
	agg := tx.Bucket(bAgg)
	key := []byte(rec.ProjectID)
	counts, err := getCounts(agg, key)
	if err != nil {
		return err
	}
	core.AddCounts(&counts, rec, sign)
	if err := putCounts(agg, key, &counts); err != nil {
		return err
	}
	return statsIndex(tx, rec, sign)
}

// getCounts reads a project's counts (none without QAs).
func getCounts(agg *bolt.Bucket, key []byte) (core.ProjectStats, error) {
	var counts core.ProjectStats
	if v := agg.Get(key); v != nil {
		if err := json.Unmarshal(v, &counts); err != nil {
			return core.ProjectStats{}, err
		}
	}
	return counts, nil
}

// putCounts writes a project's counts (deleting them at zero QAs).
func putCounts(agg *bolt.Bucket, key []byte, counts *core.ProjectStats) error {
	if counts.Total <= 0 {
		return agg.Delete(key)
	}
	v, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	return agg.Put(key, v)
}

// statsIndex adds (sign > 0) or removes rec's keys in the three indexes.
func statsIndex(tx *bolt.Tx, rec core.Record, sign int) error {
	set := func(name []byte, on bool, n uint64) error {
		b := tx.Bucket(name)
		k := projectKey(rec.ProjectID, n, rec.QAID)
		switch {
		case !on:
			return nil
		case sign > 0:
			return b.Put(k, nil)
		default:
			return b.Delete(k)
		}
	}
	sh := core.ShareOf(rec)
	if err := set(bByTrust, sh.Ranked, ^trustBits(sh.Trust)); err != nil {
		return err
	}
	if err := set(bByTTL, sh.Expires, unixNS(sh.ExpireAt)); err != nil {
		return err
	}
	return set(bWaiting, sh.Awaiting, ^unixNS(sh.CreatedAt))
}

// statsReplace takes out the share of the entry stored under doc (if any
// and counted) before a write replaces or removes it.
func statsReplace(tx *bolt.Tx, doc uint64) error {
	if !statsCounted(tx, doc) {
		return nil
	}
	old, err := getByDoc(tx, doc, false)
	if err != nil || old == nil {
		return err
	}
	return statsAdd(tx, doc, old.Rec, -1)
}

// statsOutdated reports whether a store holding QAs has no statistics,
// or them in an older layout (oldAggBuckets): an older file.
func statsOutdated(tx *bolt.Tx) bool {
	return tx.Bucket(bByTrust) == nil && tx.Bucket(bQA) != nil
}

// startStatsBuild empties the statistics buckets (creating them, and
// dropping those of an older layout) and starts their build from the
// first entry: for an older file (statsOutdated), in the transaction of
// a read-write open.
func startStatsBuild(tx *bolt.Tx) error {
	if err := dropBuckets(tx, append(oldAggBuckets, aggBuckets...)...); err != nil {
		return err
	}
	if err := createBuckets(tx, aggBuckets...); err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(keyStatsBuild, make([]byte, 8))
}

// buildStatsStep counts up to max entries from the build's cursor, and
// no more once budget (if positive) has passed, and moves the cursor past
// them, ending the build after the last entry; it returns the entries
// read. Writes keep the counted entries' shares exact
// (statsCounted) and leave the others to the build, which reads them as
// they are when it reaches them: whenever a step commits, the statistics
// are exactly those of the entries below the cursor, so a build killed
// at any point resumes where its last step committed.
func buildStatsStep(tx *bolt.Tx, max int, budget time.Duration) (int, error) {
	cursor, building := statsBuilding(tx)
	if !building {
		return 0, nil
	}
	start := time.Now()
	agg := tx.Bucket(bAgg)
	counts := map[string]*core.ProjectStats{}
	c := tx.Bucket(bQA).Cursor()
	n := 0
	k, v := c.Seek(docKey(cursor))
	for ; k != nil && n < max && (budget <= 0 || n == 0 || time.Since(start) < budget); k, v = c.Next() {
		n++
		st, err := decodeStored(binary.BigEndian.Uint64(k), v, false)
		if err != nil {
			return n, err
		}
		p := counts[st.Rec.ProjectID]
		if p == nil {
			c, err := getCounts(agg, []byte(st.Rec.ProjectID))
			if err != nil {
				return n, err
			}
			p = &c
			counts[st.Rec.ProjectID] = p
		}
		core.AddCounts(p, st.Rec, 1)
		if err := statsIndex(tx, st.Rec, 1); err != nil {
			return n, err
		}
	}
	for project, p := range counts {
		if err := putCounts(agg, []byte(project), p); err != nil {
			return n, err
		}
	}
	if k == nil {
		return n, tx.Bucket(bMeta).Delete(keyStatsBuild)
	}
	return n, tx.Bucket(bMeta).Put(keyStatsBuild, slices.Clone(k))
}

// scanStats is Stats from a scan of every record of the project as
// written: what the kept statistics equal once built, and Stats' answer
// while they cannot be.
func scanStats(ctx context.Context, tx *bolt.Tx, projectID string, now time.Time) (core.ProjectStats, error) {
	sb := core.NewStatsBuilder(projectID, now)
	prefix := []byte(projectID + "\x00")
	c := tx.Bucket(bList).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if err := ctx.Err(); err != nil {
			return core.ProjectStats{}, err
		}
		st, err := getStored(tx, string(k[len(prefix)+8:]))
		if err != nil {
			return core.ProjectStats{}, err
		}
		if st != nil {
			sb.Add(st.Rec)
		}
	}
	return sb.Stats(days(tx, projectID)), nil
}

// readStats is Stats from the kept statistics: the counts, the ends of
// the trust and awaiting indexes (core.FinishStats), the count of expiries
// up to core.ExpiryBound of now, and days.
func readStats(tx *bolt.Tx, project string, now time.Time, days []core.DayCount) (core.ProjectStats, error) {
	counts, err := getCounts(tx.Bucket(bAgg), []byte(project))
	if err != nil {
		return core.ProjectStats{}, err
	}
	prefix := append([]byte(project), 0)
	// ends reads the records of the project's first n keys in an index,
	// or of its last n (backwards) when last.
	ends := func(name []byte, n int, last bool) ([]core.Record, error) {
		c := tx.Bucket(name).Cursor()
		k, _ := c.Seek(prefix)
		if last {
			k = seekBelow(c, append([]byte(project), 1))
		}
		var out []core.Record
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < n; k = step(c, last) {
			st, err := getStored(tx, string(k[len(prefix)+8:]))
			if err != nil {
				return nil, err
			}
			if st != nil {
				out = append(out, st.Rec)
			}
		}
		return out, nil
	}
	top, err := ends(bByTrust, core.StatsTop, false)
	if err != nil {
		return core.ProjectStats{}, err
	}
	worst, err := ends(bByTrust, core.StatsTop, true)
	if err != nil {
		return core.ProjectStats{}, err
	}
	waiting, err := ends(bWaiting, core.StatsAwaiting, false)
	if err != nil {
		return core.ProjectStats{}, err
	}
	soon := 0
	bound := unixNS(core.ExpiryBound(now))
	c := tx.Bucket(bByTTL).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if binary.BigEndian.Uint64(k[len(prefix):]) > bound {
			break
		}
		soon++
	}
	return core.FinishStats(project, counts, top, worst, waiting, soon, days), nil
}

// seekBelow moves c to the last key below key (nil: none).
func seekBelow(c *bolt.Cursor, key []byte) []byte {
	if k, _ := c.Seek(key); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

// step moves c forward, or back, and returns its key.
func step(c *bolt.Cursor, back bool) []byte {
	if back {
		k, _ := c.Prev()
		return k
	}
	k, _ := c.Next()
	return k
}
