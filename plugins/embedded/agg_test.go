package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// scanStats is Stats from a scan of every record as written: what the
// kept statistics must equal (TestStatsKeptEqualScan).
func (s *Store) scanStats(ctx context.Context, projectID string) (core.ProjectStats, error) {
	now := s.cfg.clock().UTC()
	var out core.ProjectStats
	err := s.view(ctx, "stats", func(tx *bolt.Tx) error {
		sb := core.NewStatsBuilder(projectID, now)
		prefix := []byte(projectID + "\x00")
		c := tx.Bucket(bList).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			st, err := getStored(tx, string(k[len(prefix)+8:]))
			if err != nil {
				return err
			}
			if st != nil {
				sb.Add(st.Rec)
			}
		}
		out = sb.Stats(days(tx, projectID))
		return nil
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
// equal a scan of every record as written, in every project.
func TestStatsKeptEqualScan(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			s := newTestStore(t, WithClock(clock), WithKeepOpen())
			r := rand.New(rand.NewPCG(seed, 7))
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "creator"})
			projects := []string{"p1", "p2", "p10"}
			var ids []struct{ project, id string }
			pick := func() (string, string) {
				x := ids[r.IntN(len(ids))]
				return x.project, x.id
			}
			for step := range 400 {
				if len(ids) == 0 || r.IntN(4) == 0 {
					p := projects[r.IntN(len(projects))]
					q := fmt.Sprintf("how do I configure widget %d for %s?", r.IntN(40), p)
					md := map[string]any{}
					if r.IntN(6) == 0 {
						md["quarantined"] = true
					}
					res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: p, Question: q, Answer: "set widget mode " + fmt.Sprint(r.IntN(3)), Metadata: md})
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, struct{ project, id string }{p, res.QAID})
					continue
				}
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
					now = now.Add(time.Duration(r.IntN(20)) * 24 * time.Hour)
					_, err = s.Expire(ctx, now, 100)
				case 8:
					err = s.Import(ctx, []core.Record{{QAID: fmt.Sprintf("qa_imp%04d", step), ProjectID: p, Question: fmt.Sprintf("imported %d", step),
						Answer: "imported answer", Status: core.StatusActive, ValidationLevel: r.IntN(4), SuccessCount: int64(r.IntN(5)),
						TrustScore: r.Float64(), CreatedAt: now, UpdatedAt: now}})
				}
				if err != nil && !errorsIsAny(err, core.ErrNotFound, core.ErrConflict, core.ErrInvalid, core.ErrForbidden) {
					t.Fatalf("step %d: %v", step, err)
				}
				if step%50 == 49 {
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

// TestStatsBuiltOnOpen: a store whose statistics buckets are missing (an
// older file) gets them built from every QA when it is opened.
func TestStatsBuiltOnOpen(t *testing.T) {
	path := t.TempDir() + "/m.db"
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "c"})
	for i := range 5 {
		if _, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", Question: fmt.Sprintf("question %d about widgets", i), Answer: "answer"}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := s.scanStats(t.Context(), "p")
	_ = s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bAgg, bByTrust, bByTTL, bWaiting} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Stats(t.Context(), "p")
	if err != nil || got.Total != 5 {
		t.Fatalf("Stats after the rebuild: total %d, %v", got.Total, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rebuilt statistics differ (-scan +kept):\n%s", d)
	}
}
