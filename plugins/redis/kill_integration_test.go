//go:build integration

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestKillRestartAOF: kill -9 a private redis-server (AOF everysec) under
// load and restart it. No acknowledged write is lost; during the outage
// calls fail with core.ErrUnavailable within their deadline; full service
// is back within 2 s of the restart.
func TestKillRestartAOF(t *testing.T) {
	srv := redistest.StartServer(t, redistest.ServerOptions{AOF: true})
	s, err := Open(t.Context(), srv.URL(), WithPrefix(redistest.UniquePrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const nQA, writers = 4, 8
	const callTimeout = 400 * time.Millisecond
	ids := make([]string, nQA)
	for i := range ids {
		res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "crash",
			Question: fmt.Sprintf("%s crash question", coretest.Word(i*17+2)), Answer: coretest.Word(i*5 + 9)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.QAID
	}

	var (
		acked     [nQA]atomic.Int64
		attempted [nQA]atomic.Int64
		slow      atomic.Int64
		failed    atomic.Int64
		badErr    atomic.Value
		lastOK    atomic.Int64 // unix ns of the latest success
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", w)})
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := (w + i) % nQA
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				start := time.Now()
				attempted[q].Add(1)
				_, err := s.RecordValidation(cctx, core.ValidateRequest{ProjectID: "crash", QAID: ids[q], Result: "pass", SignalStrength: "weak", EventID: fmt.Sprintf("k-%d-%d", w, i)})
				cancel()
				took := time.Since(start)
				if took > callTimeout+500*time.Millisecond {
					slow.Add(1)
				}
				if err == nil {
					acked[q].Add(1)
					lastOK.Store(time.Now().UnixNano())
					continue
				}
				failed.Add(1)
				if !errors.Is(err, core.ErrUnavailable) {
					badErr.Store(err.Error())
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	srv.Kill()
	killed := time.Now()
	time.Sleep(time.Second)
	if last := time.Unix(0, lastOK.Load()); last.After(killed.Add(250 * time.Millisecond)) {
		t.Errorf("a write succeeded %s after the kill", last.Sub(killed))
	}
	srv.Restart()
	restarted := time.Now()
	// Full service: a probe succeeds, then writes keep succeeding.
	var back time.Duration
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		_, err := s.Get(ctx, "crash", ids[0])
		cancel()
		if err == nil {
			back = time.Since(restarted)
			break
		}
		if time.Since(restarted) > 5*time.Second {
			t.Fatalf("no service 5s after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(700 * time.Millisecond)
	if last := time.Unix(0, lastOK.Load()); !last.After(restarted) {
		t.Errorf("no write succeeded after the restart")
	}
	close(stop)
	wg.Wait()
	t.Logf("service back %s after restart; %d calls failed during the outage", back.Round(time.Millisecond), failed.Load())
	if failed.Load() == 0 {
		t.Errorf("no call failed while Redis was down")
	}
	if back > 2*time.Second {
		t.Errorf("full service %s after restart, want ≤ 2s", back)
	}
	if v := badErr.Load(); v != nil {
		t.Errorf("an outage error does not wrap ErrUnavailable: %s", v)
	}
	if n := slow.Load(); n > 0 {
		t.Errorf("%d calls outlived their deadline by > 500ms", n)
	}
	for q, id := range ids {
		r, err := s.Get(t.Context(), "crash", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.SuccessCount < acked[q].Load() || r.SuccessCount > attempted[q].Load() {
			t.Errorf("qa %d: %d passes stored, %d acknowledged, %d attempted: acknowledged writes lost or extra", q, r.SuccessCount, acked[q].Load(), attempted[q].Load())
		}
	}
}
