package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/trust/ledger"
)

// TestValidationRoundTrips: a validation of a QA this process last wrote
// reads the record and the reputation entries it names in one round trip
// and commits in a second; one this process did not write, or whose
// sources changed since it did (another process's validation), reads its
// reputation entries in a round trip of their own, and its result is the
// one a process that never wrote the QA computes; a QA gone from the
// project's keys is looked for elsewhere and not found.
func TestValidationRoundTrips(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := WithClock(func() time.Time { return at })
	const p = "trips"
	as := func(id string) context.Context {
		return core.WithPrincipal(t.Context(), core.Principal{ID: id, Projects: []string{p}})
	}
	// run validates a new QA as "a" through s, as "b" through another
	// process, then as "c" through last; its answer is c's result and the
	// round trips of each of s's validations.
	run := func(fresh bool) (core.Record, []int64) {
		url, prefix := redistest.URL(t), redistest.Prefix(t)
		s := openPrefix(t, url, prefix, clock)
		other := openPrefix(t, url, prefix, clock)
		// "b" disagreed with the consensus often: its vote weighs
		// nothing. Without its reputation entries it would weigh 1.
		if err := s.rdb.HSet(t.Context(), s.k.rep(p), "sd:b", "10").Err(); err != nil {
			t.Fatal(err)
		}
		rec, err := s.RecordCandidate(as("creator"), core.CandidateRequest{ProjectID: p, Question: "How to groom the alpaca", Answer: "alpaca groom --full"})
		if err != nil {
			t.Fatal(err)
		}
		var rts []int64
		validate := func(s *Store, source string) core.Record {
			before := s.batch.sent.Load()
			r, err := s.RecordValidation(as(source), core.ValidateRequest{ProjectID: p, QAID: rec.QAID, Result: "pass", SignalStrength: "strong"})
			if err != nil {
				t.Fatal(err)
			}
			rts = append(rts, s.batch.sent.Load()-before)
			return r
		}
		validate(s, "a")
		validate(other, "b")
		last := s
		if fresh {
			last = openPrefix(t, url, prefix, clock)
		}
		return validate(last, "c"), rts
	}
	got, rts := run(false)
	want, wantRTs := run(true)
	// a: kept record (2); b: another process (3); c: kept record with
	// stale sources (3), or a fresh process (3).
	if rts[0] != 2 || rts[1] != 3 || rts[2] != 3 || wantRTs[2] != 3 {
		t.Errorf("round trips %v (a fresh process's last: %d), want [2 3 3] (3)", rts, wantRTs[2])
	}
	got.QAID, want.QAID = "", ""
	if got.TrustScore != want.TrustScore || got.SuccessCount != 3 || got.SuccessCount != want.SuccessCount || got.Level != want.Level {
		t.Errorf("validation with a stale kept record = trust %v, %d passes, level %v; a fresh process's: %v, %d, %v",
			got.TrustScore, got.SuccessCount, got.Level, want.TrustScore, want.SuccessCount, want.Level)
	}

	// Gone from the project's keys while kept, and now the global
	// project's: found there (a vote the key may not cast), then gone
	// from both: not found.
	s := newShared(t)
	rec, err := s.RecordCandidate(as("creator"), core.CandidateRequest{ProjectID: p, Question: "How to shear the vicuna", Answer: "vicuna shear"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.rdb.GetDel(t.Context(), s.k.qa(p, rec.QAID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Set(t.Context(), s.k.qa(core.GlobalProject, rec.QAID), v, 0).Err(); err != nil {
		t.Fatal(err)
	}
	req := core.ValidateRequest{ProjectID: p, QAID: rec.QAID, Result: "pass"}
	if _, err := s.RecordValidation(as("a"), req); !errors.Is(err, ledger.ErrOtherOwner) {
		t.Errorf("validation of a kept QA now global: %v, want %v", err, ledger.ErrOtherOwner)
	}
	if err := s.rdb.Del(t.Context(), s.k.qa(core.GlobalProject, rec.QAID)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordValidation(as("a"), req); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("validation of a deleted kept QA: %v, want %v", err, core.ErrNotFound)
	}
}
