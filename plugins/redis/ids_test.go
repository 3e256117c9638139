package redisstore

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestIDIndex pins the qa_id index's recovery (ids.go): a claim whose
// commit never ran (a crash between the two) refuses the id to other
// projects only for claimLease and never to its own project; a deleted
// QA's id is free at once; a generated id whose candidate folded into
// another QA leaves no claim; a store whose QAs predate the index builds
// it on its first claim, and a QA kept there under an id another project
// also holds still re-imports.
func TestIDIndex(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { return now }
	s := openPrefix(t, url, prefix, WithClock(clock))
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	rec := func(p, id string) core.Record {
		return core.Record{ProjectID: p, QAID: id, Question: "How do I wake the wombat " + id + "?", Answer: "wombat wake " + id}
	}
	imp := func(st *Store, r core.Record) error { return st.Import(ctx, []core.Record{r}) }

	// A crash after the claim: proj-a's id, no QA anywhere.
	if _, err := s.claimIDs(ctx, "proj-a", []string{"crash-1", "crash-2"}, now); err != nil {
		t.Fatal(err)
	}
	if err := imp(s, rec("proj-b", "crash-1")); !errors.Is(err, core.ErrConflict) {
		t.Errorf("import under a fresh claim of another project: err = %v, want ErrConflict", err)
	}
	if err := imp(s, rec("proj-a", "crash-1")); err != nil {
		t.Errorf("the claiming project's own import after a crash: %v", err)
	}
	now = now.Add(claimLease + time.Second)
	if err := imp(s, rec("proj-b", "crash-2")); err != nil {
		t.Errorf("import under a stale claim of another project: %v", err)
	}
	if err := imp(s, rec("proj-c", "crash-1")); !errors.Is(err, core.ErrConflict) {
		t.Errorf("import under an old claim whose QA exists: err = %v, want ErrConflict", err)
	}

	// A deleted QA's id is free for another project at once.
	if err := imp(s, rec("proj-a", "gone-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "proj-a", "gone-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "proj-b", QAID: "gone-1", Question: "How do I brush the wombat?", Answer: "wombat brush"}); err != nil {
		t.Errorf("a candidate under the id of a deleted QA of another project: %v", err)
	}

	// A candidate folded into its duplicate leaves no claim for its own id.
	req := core.CandidateRequest{ProjectID: "proj-a", Question: "How do I feed the wombat?", Answer: "wombat feed --carrots"}
	if _, err := s.RecordCandidate(ctx, req); err != nil {
		t.Fatal(err)
	}
	claims := func() int64 {
		var n int64
		for b := range idBuckets {
			n += s.rdb.HLen(ctx, prefix+":ids:"+strconv.Itoa(b)).Val()
		}
		return n
	}
	before := claims()
	if res, err := s.RecordCandidate(ctx, req); err != nil || res.DeduplicatedInto == "" {
		t.Fatalf("the same candidate again: %+v, %v", res, err)
	}
	if n := claims(); n != before {
		t.Errorf("a folded candidate changed the claims: %d, want %d", n, before)
	}

	// One id in two projects from before the index: each project still
	// re-imports its own QA.
	if err := imp(s, rec("proj-a", "twice-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HDel(ctx, s.k.ids("twice-1"), "twice-1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := imp(s, rec("proj-b", "twice-1")); err != nil {
		t.Fatal(err)
	}
	if err := imp(s, rec("proj-a", "twice-1")); err != nil {
		t.Errorf("re-import of a QA whose id another project also holds from before the index: %v", err)
	}

	// QAs written before the index: the next store builds it on its
	// first claim.
	if err := imp(s, rec("proj-a", "old-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Del(ctx, prefix+":ids:built", s.k.ids("old-1")).Err(); err != nil {
		t.Fatal(err)
	}
	s2 := openPrefix(t, url, prefix, WithClock(clock))
	if err := imp(s2, rec("proj-b", "old-1")); !errors.Is(err, core.ErrConflict) {
		t.Errorf("import under the id of a QA from before the index: err = %v, want ErrConflict", err)
	}
	if err := imp(s2, rec("proj-a", "old-1")); err != nil {
		t.Errorf("its own project's import: %v", err)
	}
}
