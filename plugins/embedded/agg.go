package embedded

import (
	"bytes"
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
// in the same transaction (statsPut, statsDel), from the records as
// written.
var (
	bAgg     = []byte("agg")        // project → JSON counts (core.ProjectStats, counts only)
	bByTrust = []byte("bytrust")    // project 0 trust (float64 bits) qa_id → nil: live QAs
	bByTTL   = []byte("byttl")      // project 0 expiry (unix ns) qa_id → nil: QAs with an expiry
	bWaiting = []byte("quarantine") // project 0 created_at (unix ns) qa_id → nil: live quarantined QAs
)

func statsKey(project string, n uint64, qaID string) []byte {
	k := make([]byte, 0, len(project)+9+len(qaID))
	k = append(k, project...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, n)
	return append(k, qaID...)
}

func trustBits(t float64) uint64 {
	if !(t > 0) { // NaN and negatives first
		return 0
	}
	return math.Float64bits(t)
}

func unixNS(t time.Time) uint64 {
	if !t.After(time.Unix(0, 0)) {
		return 0
	}
	return uint64(t.UnixNano())
}

// statsAdd adds sign times rec's share to its project's statistics. Before
// the buckets exist (an upgrade writing entries) it does nothing: the
// statistics are then built from every entry (buildStats).
func statsAdd(tx *bolt.Tx, rec core.Record, sign int) error {
	agg := tx.Bucket(bAgg)
	if agg == nil {
		return nil
	}
	var counts core.ProjectStats
	key := []byte(rec.ProjectID)
	if v := agg.Get(key); v != nil {
		if err := json.Unmarshal(v, &counts); err != nil {
			return err
		}
	}
	core.AddCounts(&counts, rec, sign)
	if counts.Total <= 0 {
		if err := agg.Delete(key); err != nil {
			return err
		}
	} else {
		v, err := json.Marshal(counts)
		if err != nil {
			return err
		}
		if err := agg.Put(key, v); err != nil {
			return err
		}
	}
	set := func(name []byte, on bool, n uint64) error {
		b := tx.Bucket(name)
		k := statsKey(rec.ProjectID, n, rec.QAID)
		switch {
		case !on:
			return nil
		case sign > 0:
			return b.Put(k, nil)
		default:
			return b.Delete(k)
		}
	}
	live := core.StatsLive(rec)
	if err := set(bByTrust, live, trustBits(rec.TrustScore)); err != nil {
		return err
	}
	if err := set(bByTTL, !rec.TTLExpireAt.IsZero(), unixNS(rec.TTLExpireAt)); err != nil {
		return err
	}
	return set(bWaiting, live && rec.Quarantined, unixNS(rec.CreatedAt))
}

// statsReplace takes out the share of the entry stored under doc (if any)
// before a write replaces or removes it.
func statsReplace(tx *bolt.Tx, doc uint64) error {
	if tx.Bucket(bAgg) == nil {
		return nil
	}
	old, err := getByDoc(tx, doc)
	if err != nil || old == nil {
		return err
	}
	return statsAdd(tx, old.Rec, -1)
}

// buildStats computes the statistics from every QA entry, replacing what
// the buckets held: once, when a store without them is opened.
func buildStats(tx *bolt.Tx) error {
	for _, name := range [][]byte{bAgg, bByTrust, bByTTL, bWaiting} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	c := tx.Bucket(bQA).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		st, err := getByDoc(tx, binary.BigEndian.Uint64(k))
		if err != nil {
			return err
		}
		if st != nil {
			if err := statsAdd(tx, st.Rec, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// readStats is Stats from the kept statistics: the counts, the top and
// worst live QAs from the trust index, the newest quarantined ones, the
// count of expiries within core.ExpiringSoon of now, and days.
func readStats(tx *bolt.Tx, project string, now time.Time, days []core.DayCount) (core.ProjectStats, error) {
	var counts core.ProjectStats
	if v := tx.Bucket(bAgg).Get([]byte(project)); v != nil {
		if err := json.Unmarshal(v, &counts); err != nil {
			return core.ProjectStats{}, err
		}
	}
	prefix := append([]byte(project), 0)
	// ends reads the first n records of an index in the order order sorts
	// them: groups of one sort key from the highest (high) or the lowest,
	// within a group qa ids ascending (idAsc) or descending — never more
	// than n entries, however many QAs share a sort key.
	ends := func(name []byte, n int, high, idAsc bool, order func(a, b core.Record) int) ([]core.Record, error) {
		c := tx.Bucket(name).Cursor()
		groupKey := func(k []byte, delta uint64) []byte {
			return binary.BigEndian.AppendUint64(slices.Clone(prefix), binary.BigEndian.Uint64(k[len(prefix):])+delta)
		}
		in := func(k, p []byte) bool { return k != nil && bytes.HasPrefix(k, p) }
		var k []byte
		if high {
			if k, _ = c.Seek(append([]byte(project), 1)); k == nil { // the next project's first key
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		} else {
			k, _ = c.Seek(prefix)
		}
		var out []core.Record
		for in(k, prefix) && len(out) < n {
			start, next := groupKey(k, 0), groupKey(k, 1)
			var g []byte
			if idAsc {
				g, _ = c.Seek(start)
			} else if g, _ = c.Seek(next); g == nil {
				g, _ = c.Last()
			} else {
				g, _ = c.Prev()
			}
			for ; in(g, start) && len(out) < n; g = step(c, !idAsc) {
				st, err := getStored(tx, string(g[len(start):]))
				if err != nil {
					return nil, err
				}
				if st != nil {
					out = append(out, st.Rec)
				}
			}
			if high {
				c.Seek(start)
				k, _ = c.Prev()
			} else {
				k, _ = c.Seek(next)
			}
		}
		slices.SortFunc(out, order)
		return out, nil
	}
	top, err := ends(bByTrust, core.StatsTop, true, true, core.StatsTopOrder)
	if err != nil {
		return core.ProjectStats{}, err
	}
	worst, err := ends(bByTrust, core.StatsTop, false, false, core.StatsWorstOrder)
	if err != nil {
		return core.ProjectStats{}, err
	}
	waiting, err := ends(bWaiting, core.StatsAwaiting, true, true, core.StatsAwaitingOrder)
	if err != nil {
		return core.ProjectStats{}, err
	}
	soon := 0
	bound := unixNS(now.Add(core.ExpiringSoon))
	c := tx.Bucket(bByTTL).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if binary.BigEndian.Uint64(k[len(prefix):]) > bound {
			break
		}
		soon++
	}
	return core.FinishStats(project, counts, top, worst, waiting, soon, days), nil
}

func step(c *bolt.Cursor, back bool) []byte {
	if back {
		k, _ := c.Prev()
		return k
	}
	k, _ := c.Next()
	return k
}
