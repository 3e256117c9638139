package redisstore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/trust"
)

// TestStatsKeptEqualScan: after random writes of every kind (candidates,
// quarantined ones, duplicates with evidence, validations, hits, verdicts,
// edits, deletes, imports, expiry, time passing), the statistics Stats
// keeps equal a scan of every record as written, in every project; and
// every record a write changed has the share of that write (its derived
// fields as read back at the write's time).
func TestStatsKeptEqualScan(t *testing.T) {
	testStatsKept(t, func(t *testing.T, opts ...Option) *Store { return newShared(t, opts...) })
}

func testStatsKept(t *testing.T, open func(t *testing.T, opts ...Option) *Store) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			var mu sync.Mutex
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			// Seed 1 runs the single-user flavour: a duplicate's evidence
			// counts there.
			params := trust.DefaultParams()
			params.CountCreator = seed == 1
			s := open(t, WithClock(clock), WithTrustParams(params))
			r := rand.New(rand.NewPCG(seed, 7))
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "creator"})
			projects := []string{"p1", "p2", core.GlobalProject}
			var ids []struct{ project, id string }
			pick := func() (string, string) {
				x := ids[r.IntN(len(ids))]
				return x.project, x.id
			}
			vers := map[string]int64{}
			for step := range 300 {
				if len(ids) == 0 || r.IntN(4) == 0 {
					p := projects[r.IntN(len(projects))]
					req := core.CandidateRequest{ProjectID: p, Question: fmt.Sprintf("how do I configure widget %d for %s?", r.IntN(30), p),
						Answer: "set widget mode " + fmt.Sprint(r.IntN(3)), Metadata: map[string]any{}}
					if r.IntN(6) == 0 {
						req.Metadata["quarantined"] = true
					}
					if r.IntN(3) == 0 {
						req.Evidence = &core.Evidence{Result: "pass", Strength: "weak"}
						req.RunID = fmt.Sprintf("run-%d", step)
					}
					res, err := s.RecordCandidate(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, struct{ project, id string }{p, res.QAID})
				} else {
					p, id := pick()
					vctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("src-%d", r.IntN(5))})
					var err error
					switch r.IntN(9) {
					case 0, 1, 2:
						res := []string{"pass", "fail"}[r.IntN(2)]
						st := []string{"strong", "medium", "weak"}[r.IntN(3)]
						_, err = s.RecordValidation(vctx, core.ValidateRequest{ProjectID: p, QAID: id, Result: res, SignalStrength: st, RunID: fmt.Sprintf("run-%d", step)})
					case 3:
						_, err = s.RecordHit(vctx, core.HitRequest{ProjectID: p, RunID: fmt.Sprintf("run-%d", step), References: []core.HitRef{{QAID: id, Shown: true, Used: r.IntN(2) == 0}}})
					case 4:
						st := []core.Status{core.StatusVerified, core.StatusFrozen, core.StatusDeprecated, core.StatusActive}[r.IntN(4)]
						_, err = s.Patch(ctx, core.PatchRequest{ProjectID: p, QAID: id, Status: &st})
					case 5:
						a := fmt.Sprintf("edited answer %d", step)
						_, err = s.Patch(ctx, core.PatchRequest{ProjectID: p, QAID: id, Answer: &a})
					case 6:
						err = s.Delete(ctx, p, id)
					case 7:
						mu.Lock()
						now = now.Add(time.Duration(r.IntN(20)) * 24 * time.Hour)
						mu.Unlock()
						_, err = s.Expire(ctx, clock(), 100)
					case 8:
						err = s.Import(ctx, []core.Record{{QAID: fmt.Sprintf("qa_imp%04d", step%40), ProjectID: p, Question: fmt.Sprintf("imported %d", step),
							Answer: "imported answer", Status: core.StatusActive, ValidationLevel: r.IntN(4), SuccessCount: int64(r.IntN(5)),
							UsageCount: int64(r.IntN(5)), Quarantined: r.IntN(5) == 0, TrustScore: r.Float64(), CreatedAt: clock(), UpdatedAt: clock()}})
						ids = append(ids, struct{ project, id string }{p, fmt.Sprintf("qa_imp%04d", step%40)})
					}
					if err != nil && !errorsIsAny(err, core.ErrNotFound, core.ErrConflict, core.ErrInvalid, core.ErrForbidden) {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				checkShares(t, s, projects, vers, step)
				if step%30 == 29 {
					checkStats(t, s, projects)
				}
			}
			checkStats(t, s, projects)
		})
	}
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
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

func checkStats(t *testing.T, s *Store, projects []string) {
	t.Helper()
	for _, p := range append(projects, "none") {
		kept, err := s.Stats(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		scan, err := s.scanStats(t.Context(), p, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(scan, kept); d != "" {
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
