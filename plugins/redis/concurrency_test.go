package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
)

// errInjected is what stallHook returns after letting a commit through: the
// write happened but the client never saw the reply.
var errInjected = errors.New("injected stall: reply lost")

// stallHook makes one commit script call in every (at random: a fixed
// period would meet writers that a contended lock hands off in a fixed
// order at the same phase each round, and refuse one writer forever) run
// on the server and then stall and fail, as a lost reply would, so the
// caller retries the same event id (alone or in a pipeline).
type stallHook struct {
	every    int64
	stall    time.Duration
	armed    atomic.Bool
	injected atomic.Int64
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil || !h.armed.Load() || !isCommit(cmd) {
			return err
		}
		if rand.Int64N(h.every) != 0 {
			return nil
		}
		h.injected.Add(1)
		time.Sleep(h.stall)
		return errInjected
	}
}

// ProcessPipelineHook does the same to commits sent in a pipeline (the
// store's batcher sends them so).
func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !h.armed.Load() {
			return err
		}
		stalled := false
		for _, cmd := range cmds {
			if cmd.Err() != nil || !isCommit(cmd) {
				continue
			}
			if rand.Int64N(h.every) != 0 {
				continue
			}
			h.injected.Add(1)
			cmd.SetErr(errInjected)
			stalled = true
		}
		if stalled {
			time.Sleep(h.stall)
		}
		return err
	}
}

func isCommit(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha":
		return args[1] == commitScript.Hash()
	case "eval":
		return true
	}
	return false
}

// TestConcurrentValidations: 64 writers × 30 validations over 64 QAs, with
// every 50th commit's reply lost after it ran (the client retries with the
// same event id): every counter is exact. The integration tier runs 1,000
// per writer (TestConcurrentValidationsExact).
func TestConcurrentValidations(t *testing.T) { concurrentValidationsExact(t, 30) }

func concurrentValidationsExact(t *testing.T, perW int) {
	const (
		writers = 64
		nQA     = 64
	)
	url := redistest.URL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.PoolSize = writers * 2
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	hook := &stallHook{every: 50, stall: 2 * time.Millisecond}
	client.AddHook(hook)
	s := newOnClient(t, client)

	ids := make([]string, nQA)
	for i := range ids {
		res, err := s.RecordCandidate(core.WithPrincipal(t.Context(), core.Principal{ID: "creator"}),
			core.CandidateRequest{ProjectID: "load", Question: fmt.Sprintf("%s %s load question", coretest.Word(i*7+3), coretest.Word(i*13+5)), Answer: fmt.Sprintf("answer %s", coretest.Word(i*11+1))})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, res.QAID) {
			t.Fatalf("candidate %d deduplicated into %s", i, res.QAID)
		}
		ids[i] = res.QAID
	}
	hook.armed.Store(true)
	type want struct{ pass, fail, strongPass, weakFail int64 }
	var mu sync.Mutex
	wants := make([]want, nQA)
	var retries atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", w%16)})
			local := make([]want, nQA)
			for i := range perW {
				q := (w + i) % nQA
				req := core.ValidateRequest{ProjectID: "load", QAID: ids[q], Result: "pass", SignalStrength: "strong", EventID: fmt.Sprintf("v-%d-%d", w, i)}
				if i%3 == 0 {
					req.Result, req.SignalStrength = "fail", "weak"
				}
				var err error
				for range 20 {
					if _, err = s.RecordValidation(ctx, req); err == nil {
						break
					}
					if !errors.Is(err, core.ErrUnavailable) {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
					retries.Add(1)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: gave up: %w", w, err)
					return
				}
				if req.Result == "pass" {
					local[q].pass++
					local[q].strongPass++
				} else {
					local[q].fail++
					local[q].weakFail++
				}
			}
			mu.Lock()
			for q := range local {
				wants[q].pass += local[q].pass
				wants[q].fail += local[q].fail
				wants[q].strongPass += local[q].strongPass
				wants[q].weakFail += local[q].weakFail
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	hook.armed.Store(false) // the reads below load scripts by EVAL on a fresh server
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("%d validations in %s (%.0f/s), %d injected lost replies, %d client retries",
		writers*perW, elapsed.Round(time.Millisecond), float64(writers*perW)/elapsed.Seconds(), hook.injected.Load(), retries.Load())
	if hook.injected.Load() == 0 || retries.Load() < hook.injected.Load() {
		t.Fatalf("injected %d stalls, %d retries: the stall did not force retries", hook.injected.Load(), retries.Load())
	}
	for q, id := range ids {
		r, err := s.Get(t.Context(), "load", id)
		if err != nil {
			t.Fatal(err)
		}
		got := want{r.SuccessCount, r.FailureCount, r.Stats.StrongPass, r.Stats.WeakFail}
		if got != wants[q] {
			t.Errorf("qa %d counters = %+v, want %+v", q, got, wants[q])
		}
	}
	st, err := s.Stats(t.Context(), "load")
	if err != nil {
		t.Fatal(err)
	}
	var days int64
	for _, d := range st.ValidationsByDay {
		days += d.Passes + d.Fails
	}
	if days != int64(writers*perW) {
		t.Errorf("validations_by_day sums to %d, want %d", days, writers*perW)
	}
}

// TestConcurrentHits: concurrent hit reports on shared QAs with lost
// replies and retries count every reference exactly once (32 writers × 16;
// the integration tier's TestConcurrentHitsExact sends 100 each).
func TestConcurrentHits(t *testing.T) { concurrentHitsExact(t, 16) }

func concurrentHitsExact(t *testing.T, perW int) {
	const writers = 32
	url := redistest.URL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.PoolSize = writers * 2
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	hook := &stallHook{every: 7, stall: time.Millisecond}
	client.AddHook(hook)
	s := newOnClient(t, client)
	a, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "hits", Question: "hit one", Answer: "a"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: core.GlobalProject, Question: "hit global", Answer: "g"})
	if err != nil {
		t.Fatal(err)
	}
	hook.armed.Store(true)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perW {
				req := core.HitRequest{ProjectID: "hits", EventID: fmt.Sprintf("h-%d-%d", w, i), References: []core.HitRef{
					{QAID: a.QAID, Shown: true, Used: i%2 == 0}, {QAID: g.QAID, Shown: true},
				}}
				var err error
				for range 50 {
					var res core.HitResult
					if res, err = s.RecordHit(t.Context(), req); err == nil {
						if res.Updated != 2 {
							t.Errorf("updated = %d, want 2", res.Updated)
						}
						break
					}
					if !errors.Is(err, core.ErrUnavailable) {
						t.Errorf("RecordHit: %v", err)
						return
					}
				}
				if err != nil {
					// A count short of the total below must tell a lost
					// update from a hit never accepted.
					t.Errorf("hit %s not accepted in 50 attempts: %v", req.EventID, err)
				}
			}
		}()
	}
	wg.Wait()
	ra, err := s.Get(t.Context(), "hits", a.QAID)
	if err != nil {
		t.Fatal(err)
	}
	rg, err := s.Get(t.Context(), "hits", g.QAID)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(writers * perW); ra.UsageCount != want || ra.UseCount != want/2 || rg.UsageCount != want {
		t.Errorf("usage %d/%d, use %d, global usage %d; want %d/%d, %d, %d",
			ra.UsageCount, writers*perW, ra.UseCount, rg.UsageCount, writers*perW, writers*perW, writers*perW/2, writers*perW)
	}
	if hook.injected.Load() == 0 {
		t.Errorf("no stall injected")
	}
}

// conflictCounter is a slog.Handler that counts the store's retries after
// a version conflict.
type conflictCounter struct{ n atomic.Int64 }

func (c *conflictCounter) Enabled(context.Context, slog.Level) bool { return true }

func (c *conflictCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "redis: write conflict, retrying" {
		c.n.Add(1)
	}
	return nil
}

func (c *conflictCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *conflictCounter) WithGroup(string) slog.Handler      { return c }

// TestWritersOfOneQASerialised: the writers of one QA in one process wait
// for each other on its lock whatever project they write from — here a
// global QA validated from many projects at once — so their commits meet
// no version conflict (conflicts come only from other processes), and
// every validation counts.
func TestWritersOfOneQASerialised(t *testing.T) {
	conflicts := &conflictCounter{}
	s := openPrefix(t, redistest.URL(t), redistest.Prefix(t), WithLogger(slog.New(conflicts)))
	g, err := s.RecordCandidate(core.WithPrincipal(t.Context(), core.Principal{ID: "creator"}),
		core.CandidateRequest{ProjectID: core.GlobalProject, Question: "How to wake the global walrus", Answer: "walrus wake --gently"})
	if err != nil {
		t.Fatal(err)
	}
	const workers, perW = 16, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", w)})
			for i := range perW {
				req := core.ValidateRequest{ProjectID: fmt.Sprintf("proj-%d", w), QAID: g.QAID, Result: "pass", EventID: fmt.Sprintf("v-%d-%d", w, i)}
				if _, err := s.RecordValidation(ctx, req); err != nil {
					t.Errorf("RecordValidation: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := conflicts.n.Load(); n != 0 {
		t.Errorf("%d version conflicts between writers of one process", n)
	}
	r, err := s.Get(t.Context(), core.GlobalProject, g.QAID)
	if err != nil || r.SuccessCount != workers*perW {
		t.Errorf("success_count %d, %v; want %d", r.SuccessCount, err, workers*perW)
	}
}
