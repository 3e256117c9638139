package redisstore

import (
	"context"
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

// TestCandidateRepeatedEvent: a repeated candidate event answers its stored
// result in one round trip, its first look-up's, and writes nothing (no
// document id is reserved), also when its QA was deleted since.
func TestCandidateRepeatedEvent(t *testing.T) {
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	hook := &tripHook{}
	client.AddHook(hook)
	s := newOnClient(t, client)
	ctx := context.WithValue(core.WithPrincipal(t.Context(), core.Principal{ID: "agent"}), tripKey{}, true)
	const p = "rep"
	req := core.CandidateRequest{ProjectID: p, Question: "How to repeat the okapi census", Answer: "okapi census --again", EventID: "ev-okapi"}
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
		before := hook.trips.Load() + s.batch.sent.Load()
		got, err := s.RecordCandidate(ctx, req)
		if err != nil || got != first {
			t.Fatalf("repeated (QA deleted: %v) = %+v, %v; want %+v", deleted, got, err, first)
		}
		if n := hook.trips.Load() + s.batch.sent.Load() - before; n != 1 {
			t.Errorf("repeated (QA deleted: %v): %d round trips, want 1", deleted, n)
		}
		if now, _ := client.HGet(ctx, s.k.stats(p), "seq").Result(); now != seq {
			t.Errorf("repeated (QA deleted: %v) reserved a document id: seq %s → %s", deleted, seq, now)
		}
	}
}
