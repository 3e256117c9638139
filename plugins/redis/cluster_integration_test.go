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

// TestCluster runs the conformance suite and the kept statistics check
// (testStatsKept) on a private 3-master, 3-replica Redis Cluster, then kills the master serving a project under write load:
// writes resume within 5 s of the replica's promotion.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	open := func(t *testing.T) *Store {
		s, err := Open(t.Context(), c.URL(), WithPrefix(redistest.UniquePrefix(t)))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Run("Conformance", func(t *testing.T) {
		coretest.Run(t, func(t *testing.T) core.MemoryPlugin { return open(t) })
	})
	t.Run("Items", func(t *testing.T) {
		coretest.RunItems(t, func(t *testing.T) core.ItemStore { return open(t).Items() })
	})
	t.Run("StatsKept", func(t *testing.T) {
		testStatsKept(t, 400, func(t *testing.T, opts ...Option) *Store {
			s, err := Open(t.Context(), c.URL(), append([]Option{WithPrefix(redistest.UniquePrefix(t))}, opts...)...)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
	t.Run("Failover", func(t *testing.T) { testFailover(t, c.For(t), open(t)) })
}

func testFailover(t *testing.T, c *redistest.Cluster, s *Store) {
	const project, nQA, writers = "failover", 4, 8
	ids := make([]string, nQA)
	for i := range ids {
		res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: project,
			Question: fmt.Sprintf("%s failover question", coretest.Word(i*19+4)), Answer: coretest.Word(i*3 + 7)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.QAID
	}
	var (
		lastOK atomic.Int64
		badErr atomic.Value
		stop   = make(chan struct{})
		wg     sync.WaitGroup
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
				cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				_, err := s.RecordValidation(cctx, core.ValidateRequest{ProjectID: project, QAID: ids[(w+i)%nQA], Result: "pass", SignalStrength: "weak", EventID: fmt.Sprintf("f-%d-%d", w, i)})
				cancel()
				if err == nil {
					lastOK.Store(time.Now().UnixNano())
					continue
				}
				if !errors.Is(err, core.ErrUnavailable) {
					badErr.Store(err.Error())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(500 * time.Millisecond)
	m := c.MasterFor(s.k.qa(project, ids[0]))
	m.Kill()
	killed := time.Now()
	promoted := c.WaitFailover(m, 30*time.Second)
	deadline := promoted.Add(5 * time.Second)
	for time.Unix(0, lastOK.Load()).Before(promoted) {
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded within 5s of the promotion (killed %s before it)", promoted.Sub(killed).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	resumed := time.Unix(0, lastOK.Load())
	t.Logf("master killed; promotion seen after %s; writes resumed %s after the promotion",
		promoted.Sub(killed).Round(time.Millisecond), max(0, resumed.Sub(promoted)).Round(time.Millisecond))
	if v := badErr.Load(); v != nil {
		t.Errorf("a failover error does not wrap ErrUnavailable: %s", v)
	}
}
