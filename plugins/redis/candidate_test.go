package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// tripKey marks the contexts whose round trips a tripHook counts.
type tripKey struct{}

// tripHook counts the round trips (commands and pipelines) sent with a
// context marked by tripKey; the batcher's pipelines, sent with contexts
// of their own, count in its sent.
type tripHook struct{ trips atomic.Int64 }

func (h *tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(tripKey{}) != nil {
			h.trips.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(tripKey{}) != nil {
			h.trips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// newTripStore is a store on a client of its own whose round trips sent
// with a context marked by tripKey are counted: trips is their number so
// far, the batcher's pipelines included.
func newTripStore(t *testing.T) (s *Store, client *redis.Client, trips func() int64) {
	t.Helper()
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client = redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	hook := &tripHook{}
	client.AddHook(hook)
	s = newOnClient(t, client)
	return s, client, func() int64 { return hook.trips.Load() + s.batch.sent.Load() }
}

// TestCandidateRepeatedEvent: a repeated candidate event answers its stored
// result in one round trip, its first look-up's (the content hash's, or
// its own qa_id's), and writes nothing (no document id is reserved), also
// when its QA was deleted since.
func TestCandidateRepeatedEvent(t *testing.T) {
	s, client, trips := newTripStore(t)
	ctx := context.WithValue(core.WithPrincipal(t.Context(), core.Principal{ID: "agent"}), tripKey{}, true)
	const p = "rep"
	for _, req := range []core.CandidateRequest{
		{ProjectID: p, Question: "How to repeat the okapi census", Answer: "okapi census --again", EventID: "ev-okapi"},
		{ProjectID: p, QAID: "qa_named_census", Question: "How to repeat the tapir census", Answer: "tapir census --again", EventID: "ev-tapir"},
	} {
		first, err := s.RecordCandidate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, deleted := range []bool{false, true} {
			if deleted {
				if err := s.Delete(ctx, p, first.QAID); err != nil {
					t.Fatal(err)
				}
			}
			seq, err := client.HGet(ctx, s.k.stats(p), "seq").Result()
			if err != nil {
				t.Fatal(err)
			}
			before := trips()
			got, err := s.RecordCandidate(ctx, req)
			if err != nil || got != first {
				t.Fatalf("repeated %s (QA deleted: %v) = %+v, %v; want %+v", req.EventID, deleted, got, err, first)
			}
			if n := trips() - before; n != 1 {
				t.Errorf("repeated %s (QA deleted: %v): %d round trips, want 1", req.EventID, deleted, n)
			}
			if now, _ := client.HGet(ctx, s.k.stats(p), "seq").Result(); now != seq {
				t.Errorf("repeated %s (QA deleted: %v) reserved a document id: seq %s → %s", req.EventID, deleted, seq, now)
			}
		}
	}
}

// TestCandidateRoundTrips pins the round trips of a candidate's paths
// (after the project's first QA and the process's first claim): a
// regression that splits a pipeline or reads again fails here.
func TestCandidateRoundTrips(t *testing.T) {
	s, _, trips := newTripStore(t)
	ctx := context.WithValue(core.WithPrincipal(t.Context(), core.Principal{ID: "agent"}), tripKey{}, true)
	const p = "trips"
	warm := core.CandidateRequest{ProjectID: p, Question: "How to warm the tapir stable", Answer: "tapir warm --stable"}
	if _, err := s.RecordCandidate(ctx, warm); err != nil {
		t.Fatal(err)
	}
	pass := &core.Evidence{Result: "pass", Strength: "weak"}
	for _, c := range []struct {
		name string
		req  core.CandidateRequest
		want int64
	}{
		// The content hash's look-up with the event key; the search (one
		// round trip: no QA shares a term); the reservations (document
		// id, qa_id claim, registration in the projects it is shared
		// into); the reputation entries; the commit.
		{"new", core.CandidateRequest{ProjectID: p, Question: "How to feed the okapi herd", Answer: "okapi feed --herd", EventID: "ev-new"}, 5},
		{"new with evidence", core.CandidateRequest{ProjectID: p, Question: "How to count the quokka colony", Answer: "quokka count --colony", EventID: "ev-new-ev", RunID: "run-1", Evidence: pass}, 5},
		{"new shared", core.CandidateRequest{ProjectID: p, Question: "How to brush the llama coat", Answer: "llama brush --coat", SharedProjects: []string{"other"}}, 5},
		// Its own qa_id's QA read under its lock with the event key; the
		// reservations (a shared one registers once its claim holds: one
		// more); the reputation entries; the commit.
		{"named new", core.CandidateRequest{ProjectID: p, QAID: "qa_named_trips", Question: "How to weigh the capybara", Answer: "capybara weigh", EventID: "ev-named"}, 4},
		{"named new shared", core.CandidateRequest{ProjectID: p, QAID: "qa_named_shared", Question: "How to wash the wombat", Answer: "wombat wash", SharedProjects: []string{"other"}}, 5},
		// The same read finds the QA; its reputation entries; the commit
		// folds into it.
		{"named again", core.CandidateRequest{ProjectID: p, QAID: "qa_named_trips", Question: "How to weigh the capybara", Answer: "capybara weigh", EventID: "ev-named-2", RunID: "run-2", Evidence: pass}, 3},
		// The content hash's look-up, the QA read under its lock, its
		// reputation entries, the commit.
		{"duplicate", core.CandidateRequest{ProjectID: p, Question: warm.Question, Answer: warm.Answer, EventID: "ev-dup", RunID: "run-3", Evidence: pass}, 4},
	} {
		before := trips()
		if _, err := s.RecordCandidate(ctx, c.req); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := trips() - before
		if n != c.want {
			t.Errorf("%s: %d round trips, want %d", c.name, n, c.want)
		}
	}
}

// claimsOf returns the qa_ids the index holds claims of project p on.
func claimsOf(t *testing.T, s *Store, p string) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	iter := s.rdb.Scan(ctx, 0, s.k.prefix+":ids:*", 1000).Iterator()
	for iter.Next(ctx) {
		if iter.Val() == s.k.idsBuilt() {
			continue
		}
		m, err := s.rdb.HGetAll(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for id, v := range m {
			if owner, _ := parseClaim(v); owner == p {
				out = append(out, id)
			}
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestCandidateClaims: the reservations a new candidate makes in one round
// trip keep the qa_id index's rules. A generated id whose candidate is not
// stored (the quota refused it in the commit) is released; a qa_id of
// another project is refused without its registration in the projects it
// was to be shared into replacing the owner's.
func TestCandidateClaims(t *testing.T) {
	s := newShared(t)
	ctx := core.WithPrincipal(t.Context(), core.Principal{ID: "agent"})
	first, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "full", Question: "How to shear the alpaca", Answer: "alpaca shear", MaxQAs: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "full", Question: "How to comb the vicuna", Answer: "vicuna comb", MaxQAs: 1})
	if qe := (*core.QuotaError)(nil); !errors.As(err, &qe) {
		t.Fatalf("candidate past the quota: err = %v, want a QuotaError", err)
	}
	if got := claimsOf(t, s, "full"); !slices.Equal(got, []string{first.QAID}) {
		t.Errorf("claims of the full project = %v, want only %s (the refused candidate's released)", got, first.QAID)
	}

	owned := core.CandidateRequest{ProjectID: "owner", QAID: "qa_owned", Question: "How to shoe the zebra", Answer: "zebra shoe", SharedProjects: []string{"team"}}
	if _, err := s.RecordCandidate(ctx, owned); err != nil {
		t.Fatal(err)
	}
	other := owned
	other.ProjectID, other.Question = "intruder", "How to paint the zebra"
	if _, err := s.RecordCandidate(ctx, other); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("candidate under another project's qa_id: err = %v, want ErrConflict", err)
	}
	if got, err := s.rdb.HGet(ctx, s.k.sharedIn("team"), "qa_owned").Result(); err != nil || got != "owner" {
		t.Errorf("team's registration of qa_owned = %q, %v; want owner", got, err)
	}
}
