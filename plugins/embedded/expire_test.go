package embedded

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/memex-dev/memex/core"
)

// TestRunsExpireOldCandidates: the embedded store has no expiry job of its
// own; each run's commit examines a bounded slice of the store (64 records)
// and deprecates what the expiry job would, so old never-validated
// candidates expire with use, in every project, without memex serve.
func TestRunsExpireOldCandidates(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var offset atomic.Int64
	s := newTestStore(t, WithClock(func() time.Time { return start.Add(time.Duration(offset.Load())) }))
	ctx := t.Context()
	var ids []string
	for i := range 150 {
		res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: []string{"p", "q"}[i%2],
			Question: fmt.Sprintf("How do I tune wombat pool %d?", i), Answer: fmt.Sprintf("wombat pool --size %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	validated := ids[0]
	if _, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "p", QAID: validated, Result: "pass", SignalStrength: "strong", RunID: "r0"}); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		if _, err := s.RecordRun(ctx, core.RunReport{Hit: &core.HitRequest{ProjectID: "p", References: []core.HitRef{{QAID: validated, Shown: true}}}}); err != nil {
			t.Fatal(err)
		}
	}
	deprecated := func() int {
		n := 0
		for i, id := range ids {
			r, err := s.Get(ctx, []string{"p", "q"}[i%2], id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == core.StatusDeprecated {
				n++
			}
		}
		return n
	}
	run()
	if n := deprecated(); n != 0 {
		t.Fatalf("a run before the TTL deprecated %d candidates", n)
	}
	offset.Store(int64(31 * 24 * time.Hour))
	run()
	if n := deprecated(); n == 0 || n > runExpireBudget {
		t.Fatalf("one run after the TTL deprecated %d candidates, want 1..%d (bounded work)", n, runExpireBudget)
	}
	for range 5 {
		run()
	}
	if n := deprecated(); n != len(ids)-1 {
		t.Errorf("after runs past the TTL %d of %d never-validated candidates are deprecated", n, len(ids)-1)
	}
	if r, _ := s.Get(ctx, "p", validated); r.Status == core.StatusDeprecated {
		t.Errorf("the validated QA expired")
	}
}

// TestExpireCountsCommittedChunks: Expire commits a chunk of the list at a
// time, and on an error returns how many QAs the committed chunks
// deprecated (core.Expirer), which stay deprecated.
func TestExpireCountsCommittedChunks(t *testing.T) {
	s := newTestStore(t, func(c *config) { c.expireChunk = 2 })
	ctx := t.Context()
	var ids []string
	for i := range 5 {
		res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p",
			Question: fmt.Sprintf("How do I brush wombat %d?", i), Answer: fmt.Sprintf("wombat brush --size %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.QAID)
	}
	// The entry of the list's last QA (created last) is unreadable.
	var corrupt string
	err := s.view(ctx, "list", func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bList).Cursor().Last()
		corrupt = string(k[len("p")+9:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.update(ctx, "corrupt", func(tx *bolt.Tx) error {
		st, err := getStored(tx, corrupt)
		if err != nil {
			return err
		}
		return tx.Bucket(bQA).Put(docKey(st.Doc), []byte{0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Expire(ctx, time.Now().Add(365*24*time.Hour), 0)
	if err == nil || n != 4 {
		t.Fatalf("Expire = %d, %v; want 4 (two committed chunks of two) and the error of the corrupt entry", n, err)
	}
	for _, id := range ids {
		if id == corrupt {
			continue
		}
		if r, err := s.Get(ctx, "p", id); err != nil || r.Status != core.StatusDeprecated {
			t.Errorf("%s: status %s, %v; want deprecated (its chunk committed)", id, r.Status, err)
		}
	}
}
