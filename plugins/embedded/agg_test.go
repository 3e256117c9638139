package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

// scanStats is Stats from a scan of every record as written: what the
// kept statistics must equal (TestStatsKeptEqualScan).
func (s *Store) scanStats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	now := s.cfg.clock().UTC()
	var out core.ProjectStats
	err := s.view(ctx, "stats", func(tx *bolt.Tx) (err error) {
		out, err = scanStats(ctx, tx, projectID, now)
		return err
	})
	return out, err
}

// refreshedStats is the project's statistics from every record refreshed
// at the store's now (trust, level, status and expiry from the evidence
// and reputation of now).
func (s *Store) refreshedStats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	now := s.cfg.clock().UTC()
	var out core.ProjectStats
	err := s.view(ctx, "stats", func(tx *bolt.Tx) error {
		sb := core.NewStatsBuilder(projectID, now)
		prefix := []byte(projectID + "\x00")
		rep := reputation{tx}
		c := tx.Bucket(bList).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			st, err := getStored(tx, string(k[len(prefix)+8:]))
			if err != nil {
				return err
			}
			if st != nil {
				s.ledger.Refresh(&st.Entry, rep, now)
				sb.Add(st.Rec)
			}
		}
		out = sb.Stats(days(tx, projectID))
		return nil
	})
	return out, err
}

// TestStatsKeptEqualScan: after random writes of every kind (candidates,
// quarantined ones, duplicates, validations, hits, runs, verdicts, edits,
// deletes, imports, expiry, time passing), the statistics Stats keeps
// equal a scan of every record as written, in every project: three seeds
// of 150 writes (a store that misses a share in any index, or a write that
// skips taking out the old share, fails within them); the integration
// tier's TestStatsKeptEqualScanLong writes 400.
func TestStatsKeptEqualScan(t *testing.T) {
	statsKeptEqualScan(t, 150)
}

// statsKeptEqualScan is TestStatsKeptEqualScan with steps writes per seed.
func statsKeptEqualScan(t *testing.T, steps int) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			s := newTestStore(t, WithClock(clock), WithKeepOpen())
			w := coretest.NewRandomWriter(seed, &now, "p1", "p2", "p10")
			for step := range steps {
				w.Write(t, s, step)
				if step%50 == 49 {
					checkStats(t, s, w.Projects)
				}
			}
			checkStats(t, s, w.Projects)
		})
	}
}

func checkStats(t *testing.T, s *Store, projects []string) {
	t.Helper()
	for _, p := range append(projects, "none") {
		kept, err := s.Stats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		scan, err := s.scanStats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(scan, kept); d != "" {
			t.Fatalf("project %s: kept statistics differ from a scan (-scan +kept):\n%s", p, d)
		}
	}
}

// withStatsBuild sets the entries a statistics build reads per open or
// write (step) and per transaction of its own (chunk).
func withStatsBuild(step, chunk int) Option {
	return func(c *config) { c.buildStep, c.buildChunk = step, chunk }
}

// dropStats makes the store at path an older file: one without the kept
// statistics.
func dropStats(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range aggBuckets {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Delete(keyStatsBuild)
	}); err != nil {
		t.Fatal(err)
	}
}

// building reports whether the store's statistics build is in progress.
func building(t *testing.T, s *Store) bool {
	t.Helper()
	var b bool
	if err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
		_, b = statsBuilding(tx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatsBuiltOnOpen: opening a large store without kept statistics (an
// older file) reads a bounded number of entries, searches read none, a
// write a bounded number; Stats completes the build, and the statistics
// equal a scan.
func TestStatsBuiltOnOpen(t *testing.T) {
	const n = 1000
	path := t.TempDir() + "/m.db"
	s := newTestStoreAt(t, path)
	recs := make([]core.Record, n)
	now := time.Now().UTC()
	for i := range recs {
		recs[i] = core.Record{QAID: fmt.Sprintf("qa_%05d", i), ProjectID: []string{"p", "q"}[i%2], Question: fmt.Sprintf("question %d about widgets", i),
			Answer: "answer", Status: core.StatusActive, ValidationLevel: i % 4, TrustScore: float64(i%100) / 100, CreatedAt: now, UpdatedAt: now}
	}
	if err := s.Import(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	dropStats(t, path)

	s = newTestStoreAt(t, path)
	if got := s.statsBuilt.Load(); got > buildStepEntries {
		t.Fatalf("the open read %d entries to build the statistics, want at most %d", got, buildStepEntries)
	}
	if !building(t, s) {
		t.Fatal("no build in progress after the open")
	}
	before := s.statsBuilt.Load()
	if _, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "p", Query: "question widgets", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	if _, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", Question: "a new question about gadgets", Answer: "answer"}); err != nil {
		t.Fatal(err)
	}
	if got := s.statsBuilt.Load() - before; got > buildStepEntries {
		t.Fatalf("a search and a write read %d entries to build the statistics, want at most %d", got, buildStepEntries)
	}
	checkStats(t, s, []string{"p", "q"})
	if building(t, s) {
		t.Fatal("Stats left the build unfinished")
	}
	if got := s.statsBuilt.Load(); got < n {
		t.Fatalf("the build read %d entries of %d", got, n)
	}
}

// TestStatsBuildResumes: a build of the statistics advanced a few entries
// per write, with random writes of every kind in between, ends equal to a
// scan; so does the store left at any point of it (a copy of the file, as
// a killed process leaves it) once the build is resumed there, and a
// store closed and reopened mid-build.
func TestStatsBuildResumes(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/m.db"
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			s := newTestStoreAt(t, path, WithClock(clock))
			w := coretest.NewRandomWriter(seed, &now, "p1", "p2", "p10")
			for step := range 150 {
				w.Write(t, s, step)
			}
			_ = s.Close()
			dropStats(t, path)

			s = newTestStoreAt(t, path, WithClock(clock), withStatsBuild(2, 2))
			if got := s.statsBuilt.Load(); got > 2 {
				t.Fatalf("the open read %d entries to build the statistics, want at most 2", got)
			}
			during := 0
			for step := 150; building(t, s); step++ {
				w.Write(t, s, step)
				during++
				if during%7 == 0 {
					// A crash here: the file as the last commit left it,
					// resumed by another process.
					cp := fmt.Sprintf("%s/crash%d.db", dir, during)
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(cp, b, 0o600); err != nil {
						t.Fatal(err)
					}
					c := newTestStoreAt(t, cp, WithClock(clock), withStatsBuild(3, 5))
					checkStats(t, c, w.Projects)
					_ = c.Close()
				}
				if during%11 == 0 {
					_ = s.Close()
					s = newTestStoreAt(t, path, WithClock(clock), withStatsBuild(2, 2))
				}
			}
			if during < 20 {
				t.Fatalf("the build ended after %d writes: too few to interleave", during)
			}
			checkStats(t, s, w.Projects)
		})
	}
}

// TestStatsUpgradeFromOlderIndexes: a file whose trust and awaiting
// indexes are in the older order (oldAggBuckets: trust and created_at
// ascending) and whose counts are wrong gets its statistics built again
// at its next open: Stats equals a scan of every record, and the older
// indexes are gone.
func TestStatsUpgradeFromOlderIndexes(t *testing.T) {
	path := t.TempDir() + "/m.db"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := newTestStoreAt(t, path, WithClock(clock))
	w := coretest.NewRandomWriter(1, &now, "p1", "p2")
	for step := range 150 {
		w.Write(t, s, step)
	}
	_ = s.Close()
	// The older layout: the same entries in ascending order under the
	// older names, and counts its statistics never had.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for i, name := range []*[]byte{&bByTrust, &bWaiting} {
			old, err := tx.CreateBucket(oldAggBuckets[i])
			if err != nil {
				return err
			}
			if err := tx.Bucket(*name).ForEach(func(k, _ []byte) error {
				n := bytes.IndexByte(k, 0) + 1
				return old.Put(projectKey(string(k[:n-1]), ^binary.BigEndian.Uint64(k[n:]), string(k[n+8:])), nil)
			}); err != nil {
				return err
			}
			if err := tx.DeleteBucket(*name); err != nil {
				return err
			}
		}
		return tx.Bucket(bAgg).Put([]byte("p1"), []byte(`{"Total":1000}`))
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	s = newTestStoreAt(t, path, WithClock(clock))
	checkStats(t, s, w.Projects)
	if err := s.view(t.Context(), "test", func(tx *bolt.Tx) error {
		for _, name := range oldAggBuckets {
			if tx.Bucket(name) != nil {
				return fmt.Errorf("bucket %s left after the build", name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
