package redisstore

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/trust"
)

// TestStatsKeptEqualScan: after random writes of every kind (candidates,
// quarantined ones, duplicates with evidence, validations, hits, verdicts,
// edits, deletes, imports, expiry, time passing), the statistics Stats
// keeps equal a scan of every record as written, in every project; and
// every record a write changed has the share of that write (its derived
// fields as read back at the write's time). Three seeds of 150 writes (a
// share missing a field, or refreshed without the write's effects, fails
// within them); the integration tier's TestStatsKeptEqualScanLong writes
// 400.
func TestStatsKeptEqualScan(t *testing.T) {
	testStatsKept(t, 150, func(t *testing.T, opts ...Option) *Store { return newShared(t, opts...) })
}

// testStatsKept writes steps random writes per seed to the stores open
// makes, checking after each write the shares it changed and every 30
// writes the statistics.
func testStatsKept(t *testing.T, steps int, open func(t *testing.T, opts ...Option) *Store) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			// Odd seeds run the single-user flavour: a duplicate's evidence
			// counts there.
			params := trust.DefaultParams()
			params.CountCreator = seed%2 == 1
			s := open(t, WithClock(func() time.Time { return now }), WithTrustParams(params))
			w := coretest.NewRandomWriter(seed, &now, "p1", "p2", core.GlobalProject)
			vers := map[string]int64{}
			for step := range steps {
				w.Write(t, s, step)
				checkShares(t, s, w.Projects, vers, step)
				if step%30 == 29 {
					checkStats(t, s, w.Projects)
				}
			}
			checkStats(t, s, w.Projects)
		})
	}
}

// checkShares compares the record each write since the last check changed
// (its version moved) as its share keeps it with the record read now:
// the write and this read ran at the same time with the same reputation.
func checkShares(t *testing.T, s *Store, projects []string, vers map[string]int64, step int) {
	t.Helper()
	ctx := t.Context()
	now := s.cfg.clock().UTC()
	for _, p := range projects {
		rep, err := s.fullRep(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		err = s.walk(ctx, p, nil, func(_ listEntry, st *stored) bool {
			key := p + "\x00" + st.ID
			seen[key] = true
			if vers[key] == st.ver {
				return true
			}
			vers[key] = st.ver
			share, err := s.rdb.HGet(ctx, s.k.shares(p, st.Doc), st.ID).Result()
			if err != nil {
				t.Fatalf("step %d: %s/%s (version %d) has no share: %v", step, p, st.ID, st.ver, err)
			}
			got, err := asWritten(st, share)
			if err != nil {
				t.Fatal(err)
			}
			want := s.refresh(rep, st, now)
			approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-9 })
			if d := cmp.Diff(want, got, approx); d != "" {
				t.Fatalf("step %d: %s/%s: the share differs from the record at its write (-read now +share):\n%s", step, p, st.ID, d)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		for key := range vers {
			if key[:len(p)+1] == p+"\x00" && !seen[key] {
				delete(vers, key)
			}
		}
	}
}

// writtenScan is the statistics from a read of every QA of p as its last
// write left it (its share's derived fields): what the kept ones must be.
func writtenScan(t *testing.T, s *Store, p string) core.ProjectStats {
	t.Helper()
	ctx := t.Context()
	sb := core.NewStatsBuilder(p, s.cfg.clock().UTC())
	err := s.walk(ctx, p, nil, func(_ listEntry, st *stored) bool {
		share, err := s.rdb.HGet(ctx, s.k.shares(p, st.Doc), st.ID).Result()
		if err != nil {
			t.Fatalf("share of %s: %v", st.ID, err)
		}
		r, err := asWritten(st, share)
		if err != nil {
			t.Fatal(err)
		}
		sb.Add(r)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	days, err := s.days(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return sb.Stats(days)
}

func checkStats(t *testing.T, s *Store, projects []string) {
	t.Helper()
	for _, p := range append(projects, "none") {
		kept, err := s.Stats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(writtenScan(t, s, p), kept); d != "" {
			t.Fatalf("project %s: kept statistics differ from a scan (-scan +kept):\n%s", p, d)
		}
	}
}

// TestStatsBuilt: a project whose QAs were written without statistics
// (an older store: no agg, shares or sets) gets them built once, by one
// of several servers asking at the same time while writes go on, and
// they then equal a scan.
func TestStatsBuilt(t *testing.T) {
	a := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	const p = "old"
	var ids []string
	for i := range 250 {
		res, err := a.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("question %d about %s", i, "widgets"),
			Answer: "answer", Metadata: map[string]any{"quarantined": i%7 == 0}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	// Forget the statistics, as a store written before they were kept.
	keys, err := a.rdb.Keys(ctx, a.k.tag(p)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k == a.k.agg(p) || k == a.k.byTrust(p) || k == a.k.byExpiry(p) || k == a.k.awaiting(p) || k[len(a.k.tag(p)):][:3] == "sh:" {
			if err := a.rdb.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := openPrefix(t, redistest.URL(t), a.k.prefix)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			if _, err := s.Stats(t.Context(), p); err != nil {
				errs <- err
			}
		})
	}
	wg.Go(func() {
		for i, id := range ids[:60] {
			vctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("src-%d", i%3)})
			if _, err := a.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: "pass", SignalStrength: "strong"}); err != nil {
				errs <- err
			}
			if i%10 == 0 {
				if err := b.Delete(t.Context(), p, ids[len(ids)-1-i]); err != nil {
					errs <- err
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := a.rdb.HGet(ctx, a.k.agg(p), aggBuilt).Result(); v == "" {
		t.Fatal("statistics not marked built")
	}
	checkStats(t, a, []string{p})
	if st, _ := a.Stats(t.Context(), p); st.Total != 250-6 || st.Quarantined == 0 {
		t.Errorf("total %d quarantined %d, want 244 and some", st.Total, st.Quarantined)
	}
}

// TestUnlockAggKeepsAnotherBuildersLock: a builder whose lock outlived its
// lifetime releases only its own token, never a later builder's lock.
func TestUnlockAggKeepsAnotherBuildersLock(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	lock := s.k.aggLock("p")
	if err := s.rdb.Set(ctx, lock, "later-builder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s.release(ctx, unlockAggScript, lock, "first-builder")
	if v, _ := s.rdb.Get(ctx, lock).Result(); v != "later-builder" {
		t.Fatalf("lock holds %q after the first builder's release, want the later builder's", v)
	}
	s.release(ctx, unlockAggScript, lock, "later-builder")
	if n, _ := s.rdb.Exists(ctx, lock).Result(); n != 0 {
		t.Fatal("the holder's own release left the lock")
	}
}
