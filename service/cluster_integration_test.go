//go:build integration

package service

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/wire"
)

// TestFaultClusterFailover serves memex on a private 3-master, 3-replica
// Redis Cluster while 8 clients send validations, each retried with its own
// Idempotency-Key until acknowledged, and kills -9 the master serving the
// project (SPEC §10). Meanwhile every answer is 2xx or 503 + Retry-After in
// the error shape within the request timeout (never a 500, never a hang);
// writes through the service resume within 5 s of the replica's promotion;
// afterwards every QA's success_count equals the acknowledged passes (none
// lost, none doubled).
//
// Redis replicates asynchronously: a write the master acknowledged in the
// instant before the kill, whose replication bytes had not yet left it, is
// lost by any Redis Cluster (docs/REDIS.md). On loopback the master writes
// the replication stream in the same event-loop pass as the reply, so this
// test sees none; a loss here would be that window, reported as such.
func TestFaultClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	store, err := redisstore.Open(t.Context(), c.URL(), redisstore.WithPrefix(redistest.UniquePrefix(t)))
	if err != nil {
		t.Fatalf("redisstore.Open: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e := newEnvFor(t, store, withConfig(faultConfig))
	keys := faultKeys()

	const project, nQA = "f-cluster", 4
	ids := make([]string, nQA)
	for i := range ids {
		ids[i] = e.addQA(keyAdmin, project, "How does "+faultWords(i)+" fail over?", "It promotes "+faultWords(100+i)+".")
	}

	var (
		acked     [nQA]atomic.Int64
		n503      atomic.Int64
		maxTook   atomic.Int64
		bad, lost errs
		stop      atomic.Bool
		promoted  atomic.Int64 // unix ns
		firstAck  atomic.Int64 // unix ns of the first write acknowledged after the promotion
		wg        sync.WaitGroup
	)
	// do sends one validation until it is acknowledged (the same key on
	// every retry); it gives up 10 s after stop.
	do := func(k Key, body any, idemKey string) bool {
		var gaveUp time.Time
		for {
			start := time.Now()
			a, err := e.send(k, "POST", "/v1/qa/validate", body, idemKey)
			if d := int64(a.took); d > maxTook.Load() {
				maxTook.Store(d) // racy max; good enough for a log line
			}
			switch {
			case err != nil:
				bad.add("%s: transport error after %s: %v", idemKey, a.took, err)
			case a.status == http.StatusOK:
				if err := latencyBound(a); err != nil {
					bad.add("%s: %v", idemKey, err)
				}
				if p := promoted.Load(); p != 0 && start.UnixNano() > p {
					firstAck.CompareAndSwap(0, time.Now().UnixNano())
				}
				return true
			default:
				n503.Add(1)
				if err := unavailableShape(a); err != nil {
					bad.add("%s: %v", idemKey, err)
				}
			}
			if stop.Load() {
				if gaveUp.IsZero() {
					gaveUp = time.Now().Add(10 * time.Second)
				} else if time.Now().After(gaveUp) {
					return false
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for w := range faultWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				q := (w + i) % nQA
				idem := fmt.Sprintf("w%d-v%d", w, i)
				if do(keys[w], map[string]any{"project_id": project, "qa_id": ids[q], "result": "pass", "signal_strength": "weak"}, idem) {
					acked[q].Add(1)
				} else {
					lost.add("validation %s never acknowledged", idem)
				}
			}
		}()
	}

	time.Sleep(700 * time.Millisecond)
	m := c.MasterFor("x:{" + project + "}:y") // the slot of the project's hash tag
	m.Kill()
	killed := time.Now()
	p := c.WaitFailover(m, 30*time.Second)
	promoted.Store(p.UnixNano())
	deadline := p.Add(5 * time.Second)
	for firstAck.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	resumed := firstAck.Load()
	time.Sleep(500 * time.Millisecond) // load after the failover
	stop.Store(true)
	wg.Wait()

	var passes int64
	for q := range ids {
		passes += acked[q].Load()
	}
	t.Logf("promotion seen %s after the kill; first write acknowledged %s after it; %d 503s; %d passes acknowledged; slowest answer %s",
		p.Sub(killed).Round(time.Millisecond), time.Duration(resumed-p.UnixNano()).Round(time.Millisecond),
		n503.Load(), passes, time.Duration(maxTook.Load()).Round(time.Millisecond))
	if resumed == 0 {
		t.Errorf("no write acknowledged within 5 s of the promotion")
	}
	bad.report(t, "bad answers (want 200, or 503 + Retry-After + error shape within the request timeout)")
	lost.report(t, "writes never acknowledged after the failover")
	// Replication is asynchronous (docs/REDIS.md): a pass the old master
	// acknowledged in the instant before the kill, not yet sent to its
	// replica, is lost — at most one a writer, since each has one request
	// in flight. A pass counted twice, or more lost, is a bug.
	var missing int64
	for q, id := range ids {
		var rr wire.RecordResponse
		e.must(http.StatusOK, keyAdmin, "GET", "/v1/qa/"+id+"?project_id="+project, nil).decode(t, &rr)
		got, want := rr.Record.SuccessCount, acked[q].Load()
		if got > want {
			t.Errorf("qa %d: success_count %d, only %d passes acknowledged (counted twice)", q, got, want)
		}
		missing += max(want-got, 0)
	}
	if missing > faultWorkers {
		t.Errorf("%d acknowledged passes lost, want at most %d (one in flight a writer at the kill)", missing, faultWorkers)
	} else if missing > 0 {
		t.Logf("%d acknowledged passes lost to asynchronous replication at the kill", missing)
	}
}
