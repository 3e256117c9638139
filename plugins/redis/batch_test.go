package redisstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestBatcherResults: concurrent callers' pipelines sent together each get
// their own answers and their own first error, and batches form.
func TestBatcherResults(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	const callers, per = 64, 20
	for i := range callers * per {
		if err := s.rdb.Set(ctx, s.k.prefix+"bt:"+strconv.Itoa(i), i, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range callers * per {
			s.rdb.Del(context.Background(), s.k.prefix+"bt:"+strconv.Itoa(i))
		}
	})
	b := newBatcher(s.rdb, 1)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Go(func() {
			for round := range 5 {
				pipe := s.rdb.Pipeline()
				cmds := make([]*redis.StringCmd, per)
				for j := range per {
					cmds[j] = pipe.Get(ctx, s.k.prefix+"bt:"+strconv.Itoa(c*per+j))
				}
				// Every other caller also asks for a missing key: its
				// first error is redis.Nil, the others' nil.
				var miss *redis.StringCmd
				if c%2 == 1 {
					miss = pipe.Get(ctx, s.k.prefix+"bt:missing")
				}
				err := b.exec(ctx, pipe)
				if want := c%2 == 1; errors.Is(err, redis.Nil) != want || (!want && err != nil) {
					errs <- errors.New("caller " + strconv.Itoa(c) + " round " + strconv.Itoa(round) + ": first error " + errString(err))
					return
				}
				for j, cmd := range cmds {
					if v, err := cmd.Int(); err != nil || v != c*per+j {
						errs <- errors.New("caller " + strconv.Itoa(c) + ": got " + cmd.String())
						return
					}
				}
				if miss != nil && !errors.Is(miss.Err(), redis.Nil) {
					errs <- errors.New("missing key: " + miss.String())
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := b.sent.Load(); n >= callers*5 {
		t.Errorf("%d batches for %d pipelines: none were sent together", n, callers*5)
	} else {
		t.Logf("%d pipelines in %d batches", callers*5, n)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestBatcherCallerContext: a caller whose context ends stops waiting at
// once, with its context's error, and a batch still goes out for the
// others.
// holding reports whether a batch holds a slot.
func (b *batcher) holding() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy > 0
}

func TestBatcherCallerContext(t *testing.T) {
	s := newShared(t)
	b := newBatcher(s.rdb, 1)
	// Hold the only slot with a slow command.
	slow := make(chan error, 1)
	go func() {
		pipe := s.rdb.Pipeline()
		pipe.BLPop(t.Context(), time.Second, s.k.prefix+"never")
		slow <- b.exec(t.Context(), pipe)
	}()
	for !b.holding() {
		time.Sleep(time.Millisecond) // until the slow command has the slot
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	pipe := s.rdb.Pipeline()
	pipe.Get(ctx, s.k.prefix+"nothing") // (not to be read once abandoned)
	err := b.exec(ctx, pipe)
	var gone *abandonedError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &gone) {
		t.Errorf("waiting caller: %v, want its deadline", err)
	}
	if len(slow) != 0 {
		t.Error("the waiting caller returned only after the slot was free, not at its deadline")
	}
	if err := <-slow; !errors.Is(err, redis.Nil) {
		t.Fatalf("slow caller: %v, want redis.Nil (BLPOP timed out)", err)
	}
	// And the batcher still works.
	pipe = s.rdb.Pipeline()
	ping := pipe.Ping(t.Context())
	if err := b.exec(t.Context(), pipe); err != nil || ping.Val() != "PONG" {
		t.Errorf("after: %v %q", err, ping.Val())
	}
}

// TestScriptsAfterFlush: writes and receipt redemptions sent through the
// batcher (EVALSHA) still work on a server that has lost its scripts (a
// restart, a failover, SCRIPT FLUSH): they fall back to EVAL.
func TestScriptsAfterFlush(t *testing.T) {
	srv := redistest.StartServer(t, redistest.ServerOptions{})
	s, err := Open(t.Context(), srv.URL(), WithPrefix("flush"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	res, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "p", Question: "how to flush scripts", Answer: "SCRIPT FLUSH drops them all"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 3 {
		if _, err := srv.Cli("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		voter := core.WithPrincipal(ctx, core.Principal{ID: "voter"}) // (the creator's own reports do not count)
		if _, err := s.RecordValidation(voter, core.ValidateRequest{ProjectID: "p", QAID: res.QAID, Result: "pass", EventID: "ev" + strconv.Itoa(i)}); err != nil {
			t.Fatalf("validation %d after SCRIPT FLUSH: %v", i, err)
		}
		id := "rc" + strconv.Itoa(i)
		if err := s.IssueReceipt(ctx, core.Receipt{ID: id, ProjectID: "p", Source: "k", QAIDs: []string{res.QAID}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Cli("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RedeemReceipt(ctx, "p", id, "k", now); err != nil {
			t.Fatalf("redeem %d after SCRIPT FLUSH: %v", i, err)
		}
	}
	rec, err := s.Get(ctx, "p", res.QAID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SuccessCount != 3 {
		t.Errorf("success count %d, want 3", rec.SuccessCount)
	}
}
