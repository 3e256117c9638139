package embedded

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// TestConcurrentValidations is SPEC §10 "no lost or doubled updates" on
// the embedded store as `memex serve` runs it (keep-open, group commit): 64
// writers × 10 validations (each writer's tenth sent twice). The integration
// tier runs the same with 1,000 per writer (TestConcurrentValidationsExact,
// the throughput figure of docs/PERFORMANCE.md).
func TestConcurrentValidations(t *testing.T) { concurrentValidationsExact(t, 10) }

// concurrentValidationsExact: 64 writers (64 agents: one evidence source
// each, as keys are in the service) × perWriter validations, every tenth
// one sent twice with the same event id as a client retry after a stall
// would → every counter exact.
func concurrentValidationsExact(t *testing.T, perWriter int) {
	const writers, qas = 64, 8
	s, err := Open(filepath.Join(t.TempDir(), "memex.db"), WithKeepOpen())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ids := make([]string, qas)
	for i := range ids {
		res, err := s.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p",
			Question: fmt.Sprintf("How do I tune knob %c%c of the walrus scheduler?", 'a'+i, 'k'+i),
			Answer:   fmt.Sprintf("Set walrus.knob%c%c in the config and reload.", 'a'+i, 'k'+i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.QAID
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := core.WithPrincipal(t.Context(), core.Principal{ID: fmt.Sprintf("agent-%d", w)})
			for i := range perWriter {
				req := core.ValidateRequest{ProjectID: "p", QAID: ids[(w+i)%qas], Result: "pass", SignalStrength: "strong",
					RunID: fmt.Sprintf("run-%d-%d", w, i), EventID: fmt.Sprintf("ev-%d-%d", w, i)}
				if _, err := s.RecordValidation(ctx, req); err != nil {
					errs <- err
					return
				}
				if i%10 == 0 { // the retry: same event id, must not count again
					if _, err := s.RecordValidation(ctx, req); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	total := 0
	for _, id := range ids {
		r, err := s.Get(t.Context(), "p", id)
		if err != nil {
			t.Fatal(err)
		}
		total += int(r.SuccessCount)
		if want := int64(writers * perWriter / qas); r.SuccessCount != want || r.StrongSignalCount != want || r.Stats.StrongPass != want {
			t.Errorf("%s: success %d strong %d stats %d, want %d each", id, r.SuccessCount, r.StrongSignalCount, r.Stats.StrongPass, want)
		}
	}
	t.Logf("%d validations (+%d retries) in %v: %.0f/s", total, writers*((perWriter+9)/10), elapsed, float64(total)/elapsed.Seconds())
}
