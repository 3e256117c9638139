//go:build integration

package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/wire"
)

// Fault tests: the service over a private redis-server that the test kills,
// restarts or stalls (SPEC §6, §7: a store outage is 503 + Retry-After in
// the one error shape within the request timeout, never a 500 or a hang).

const (
	// faultTimeout is the service's request timeout in these tests.
	faultTimeout = 500 * time.Millisecond
	// faultSlack is the scheduling slack allowed over faultTimeout (the
	// machine is shared and -race slows everything down).
	faultSlack = 500 * time.Millisecond
	// faultWorkers is the number of concurrent clients under load.
	faultWorkers = 8
)

// faultKeys are the worker keys w0..w7 (agents of the f-* projects).
func faultKeys() []Key {
	ks := make([]Key, faultWorkers)
	for i := range ks {
		ks[i] = Key{ID: fmt.Sprintf("w%d", i), Role: RoleAgent, Projects: []string{"f-*"}}
	}
	return withHash(ks...)
}

// faultConfig: a short request timeout, receipts not required (the
// workers validate without searching first).
func faultConfig(c *Config) {
	c.RequestTimeout = faultTimeout
	c.RequireReceipts = false
	c.Keys = append(c.Keys, faultKeys()...)
}

// openFaultStore opens the Redis store on a private server.
func openFaultStore(t *testing.T, srv *redistest.Server) *redisstore.Store {
	t.Helper()
	store, err := redisstore.Open(t.Context(), srv.URL(), redisstore.WithPrefix(redistest.UniquePrefix(t)))
	if err != nil {
		t.Fatalf("redisstore.Open: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// faultWords is the i-th run of five words no other run shares, and no
// near-duplicate of another run's either: consecutive word numbers differ
// only in one syllable (coretest.Word), and runs that differ in one
// syllable per word are near duplicates (core.Similarity ≥ 0.85), which
// the store merges by design; a multiplicative permutation of the word
// numbers scatters them.
func faultWords(i int) string {
	const vocab = 20000 // coretest's vocabulary size
	ws := make([]string, 5)
	for k := range ws {
		x := 1000 + 5*i + k
		ws[k] = coretest.Word(x % vocab * 7919 % vocab)
		if x >= vocab {
			ws[k] += coretest.Word(x / vocab)
		}
	}
	return strings.Join(ws, " ")
}

// answer is one request's outcome, measured by the client.
type answer struct {
	resp
	took time.Duration
}

// faultClient has its own timeout so a hung request fails the test
// instead of the test binary.
var faultClient = &http.Client{Timeout: 10 * time.Second}

// send is a goroutine-safe request (no t.Fatal): k's bearer secret, a JSON
// body and an optional Idempotency-Key.
func (e *env) send(k Key, method, path string, body any, idemKey string) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if k.ID != "" {
		req.Header.Set("Authorization", "Bearer "+secretOf(k))
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	start := time.Now()
	res, err := faultClient.Do(req)
	if err != nil {
		return answer{took: time.Since(start)}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	took := time.Since(start)
	if err != nil {
		return answer{took: took}, err
	}
	return answer{resp: resp{status: res.StatusCode, header: res.Header, body: b}, took: took}, nil
}

// unavailableShape checks an outage answer: 503, Retry-After, the one
// error shape with code "unavailable", within the request timeout.
func unavailableShape(a answer) error {
	if a.status != http.StatusServiceUnavailable {
		return fmt.Errorf("status %d, want 503; body %s", a.status, a.body)
	}
	if a.header.Get("Retry-After") == "" {
		return fmt.Errorf("503 without Retry-After; body %s", a.body)
	}
	var eb wire.ErrorResponse
	if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error.Code != "unavailable" || eb.Error.Message == "" {
		return fmt.Errorf("503 body is not the error shape with code unavailable: %s", a.body)
	}
	return latencyBound(a)
}

func latencyBound(a answer) error {
	if a.took > faultTimeout+faultSlack {
		return fmt.Errorf("answered %d after %s, want ≤ %s (request timeout %s)", a.status, a.took.Round(time.Millisecond), faultTimeout+faultSlack, faultTimeout)
	}
	return nil
}

// errs collects goroutine failures (the first few are reported).
type errs struct {
	mu   sync.Mutex
	list []string
	n    int
}

func (e *errs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.list) < 10 {
		e.list = append(e.list, fmt.Sprintf(format, args...))
	}
}

func (e *errs) report(t *testing.T, what string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n > 0 {
		t.Errorf("%d %s, first ones:", e.n, what)
		for _, s := range e.list {
			t.Errorf("  %s", s)
		}
	}
}

// TestFaultKillRestartUnderLoad kills -9 a private redis-server (AOF,
// appendfsync everysec) while 8 clients send validations and candidates,
// each with its own Idempotency-Key, and restarts it on the same port and
// directory. During the outage every answer is 503 + Retry-After in the
// error shape within the request timeout; full service is back ≤ 2 s after
// Redis answers PING; a client retries a failed write with the same key
// until it is acknowledged, and afterwards every acknowledged write is
// stored exactly once (success_count per QA = acknowledged passes, every
// acknowledged candidate readable).
//
// appendfsync everysec suffices: an acknowledged write has been written to
// the AOF (the page cache) before Redis replies, so a process crash loses
// none; only a machine crash loses the last second (docs/REDIS.md).
//
// What an acknowledged write may lose is what the AOF's fsync policy
// promises (docs/REDIS.md, "Recommended Redis profile"). With appendfsync
// always, nothing: every acknowledged write is found after the restart.
// With everysec (the recommended profile), a kill -9 of the process loses
// nothing either — unless a background fsync is slow, when Redis postpones
// the AOF write for up to 2 s: writes acknowledged in the last 2 s before
// the kill may then be missing. The everysec run checks exactly that
// promise: every write acknowledged more than 2 s before the kill is there,
// nothing is counted twice, and a later one may be missing.
func TestFaultKillRestartUnderLoad(t *testing.T) {
	t.Run("appendfsync always", func(t *testing.T) { faultKillRestart(t, "always", 800*time.Millisecond) })
	t.Run("appendfsync everysec", func(t *testing.T) { faultKillRestart(t, "everysec", 3*time.Second) })
}

// aofPostponeWindow is how long Redis may postpone an AOF write while a
// background fsync is slow (appendfsync everysec).
const aofPostponeWindow = 2 * time.Second

func faultKillRestart(t *testing.T, fsync string, loadBeforeKill time.Duration) {
	srv := redistest.StartServer(t, redistest.ServerOptions{AOF: true, AppendFsync: fsync})
	store := openFaultStore(t, srv)
	e := newEnvFor(t, store, withConfig(faultConfig))
	keys := faultKeys()

	const project, nQA = "f-crash", 4
	ids := make([]string, nQA)
	for i := range ids {
		ids[i] = e.addQA(keyAdmin, project, "How does "+faultWords(i)+" recover?", "It replays "+faultWords(100+i)+".")
	}

	type cand struct {
		id, question string
		acked        time.Time
	}
	var (
		ackedPass  [nQA]atomic.Int64
		ackMu      sync.Mutex
		passAcks   [nQA][]time.Time // when each pass was acknowledged
		candMu     sync.Mutex
		cands      []cand
		outage503  atomic.Int64
		maxTook    atomic.Int64
		bad        errs // 500s, other statuses, wrong 503 shape, slow answers
		lost       errs // acknowledged writes missing afterwards
		killedAt   atomic.Int64
		restartAt  atomic.Int64
		okInOutage errs
		stop       atomic.Bool
		seq        atomic.Int64
		firstAck   atomic.Int64 // unix ns of the first write acknowledged after the restart began
		wg         sync.WaitGroup
	)
	// do sends one write until it is acknowledged (the same key on every
	// retry), checking every failure; it gives up 10 s after stop.
	do := func(k Key, path string, body any, idemKey string) (answer, bool) {
		var gaveUp time.Time
		for {
			start := time.Now()
			a, err := e.send(k, "POST", path, body, idemKey)
			if d := int64(a.took); d > maxTook.Load() {
				maxTook.Store(d) // racy max; good enough for a log line
			}
			switch {
			case err != nil:
				bad.add("%s %s: transport error after %s: %v", path, idemKey, a.took, err)
			case a.status/100 == 2:
				if err := latencyBound(a); err != nil {
					bad.add("%s %s: %v", path, idemKey, err)
				}
				k, r := killedAt.Load(), restartAt.Load()
				if k != 0 && start.UnixNano() > k && r == 0 {
					okInOutage.add("%s %s: %d for a request sent %s after the kill", path, idemKey, a.status, time.Since(time.Unix(0, k)))
				}
				if r != 0 {
					firstAck.CompareAndSwap(0, time.Now().UnixNano())
				}
				return a, true
			default:
				outage503.Add(1)
				if err := unavailableShape(a); err != nil {
					bad.add("%s %s: %v", path, idemKey, err)
				}
			}
			if stop.Load() {
				if gaveUp.IsZero() {
					gaveUp = time.Now().Add(10 * time.Second)
				} else if time.Now().After(gaveUp) {
					return a, false
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
				idem := fmt.Sprintf("w%d-op%d", w, i)
				if i%2 == 0 {
					q := (w + i/2) % nQA
					if _, ok := do(keys[w], "/v1/qa/validate", map[string]any{"project_id": project, "qa_id": ids[q],
						"result": "pass", "signal_strength": "weak"}, idem); ok {
						ackedPass[q].Add(1)
						ackMu.Lock()
						passAcks[q] = append(passAcks[q], time.Now())
						ackMu.Unlock()
					} else {
						lost.add("validation %s never acknowledged", idem)
					}
					continue
				}
				// Distinct words: near-duplicate candidates are merged by design.
				n := int(seq.Add(1))
				question := "Why does " + faultWords(2*n+200) + " survive?"
				a, ok := do(keys[w], "/v1/qa/candidates", map[string]any{"project_id": project, "question": question,
					"answer": "Because " + faultWords(2*n+201) + " commits first."}, idem)
				if !ok {
					lost.add("candidate %s never acknowledged", idem)
					continue
				}
				var res core.CandidateResult
				if err := json.Unmarshal(a.body, &res); err != nil || res.QAID == "" {
					bad.add("candidate %s: answer without qa_id: %s", idem, a.body)
					continue
				}
				candMu.Lock()
				cands = append(cands, cand{res.QAID, question, time.Now()})
				candMu.Unlock()
			}
		}()
	}

	time.Sleep(loadBeforeKill)
	srv.Kill()
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	// The outage: readyz says so too.
	time.Sleep(300 * time.Millisecond)
	if a, err := e.send(Key{}, "GET", "/readyz", nil, ""); err != nil {
		t.Errorf("readyz during the outage: %v", err)
	} else if err := unavailableShape(a); err != nil {
		t.Errorf("readyz during the outage: %v", err)
	}
	time.Sleep(900 * time.Millisecond)
	restartAt.Store(time.Now().UnixNano())
	srv.Restart() // returns once the server answers PING (AOF loaded)
	pinged := time.Now()
	var back time.Duration
	for {
		a, err := e.send(keyAdmin, "GET", "/v1/qa/"+ids[0]+"?project_id="+project, nil, "")
		if err == nil && a.status == http.StatusOK {
			back = time.Since(pinged)
			break
		}
		if time.Since(pinged) > 5*time.Second {
			t.Fatalf("no service 5 s after Redis answers PING: %d %s %v", a.status, a.body, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // load after the restart
	stop.Store(true)
	wg.Wait()

	var passes int64
	for q := range ids {
		passes += ackedPass[q].Load()
	}
	t.Logf("service back %s after Redis answered PING; %d 503s during the outage; %d passes and %d candidates acknowledged; slowest answer %s",
		back.Round(time.Millisecond), outage503.Load(), passes, len(cands), time.Duration(maxTook.Load()).Round(time.Millisecond))
	bad.report(t, "bad answers (want 2xx, or 503 + Retry-After + error shape within the request timeout)")
	okInOutage.report(t, "writes acknowledged while Redis was down")
	lost.report(t, "writes never acknowledged after the restart")
	if outage503.Load() == 0 {
		t.Errorf("no request failed while Redis was down")
	}
	if back > 2*time.Second {
		t.Errorf("full service %s after Redis answered PING, want ≤ 2 s", back)
	}
	if f := firstAck.Load(); f == 0 {
		t.Errorf("no write acknowledged after the restart")
	} else if d := time.Unix(0, f).Sub(pinged); d > 2*time.Second {
		t.Errorf("first write acknowledged %s after Redis answered PING, want ≤ 2 s", d.Round(time.Millisecond))
	}
	if passes == 0 || len(cands) == 0 {
		t.Fatalf("no load: %d passes, %d candidates acknowledged", passes, len(cands))
	}

	// durable is whether a write acknowledged at ack must survive the kill.
	durable := func(ack time.Time) bool { return fsync == "always" || ack.Before(killed.Add(-aofPostponeWindow)) }
	var mayLose int
	for q, id := range ids {
		var rr wire.RecordResponse
		e.must(http.StatusOK, keyAdmin, "GET", "/v1/qa/"+id+"?project_id="+project, nil).decode(t, &rr)
		var must int64
		for _, ack := range passAcks[q] {
			if durable(ack) {
				must++
			}
		}
		mayLose += int(ackedPass[q].Load() - must)
		if got := rr.Record.SuccessCount; got < must || got > ackedPass[q].Load() {
			t.Errorf("qa %d: success_count %d; %d passes acknowledged, %d of them before the window appendfsync %s may lose (each sent until acknowledged with one Idempotency-Key)",
				q, got, ackedPass[q].Load(), must, fsync)
		}
	}
	seen := map[string]bool{}
	lostCands := 0
	for _, c := range cands {
		if seen[c.id] {
			t.Errorf("two acknowledged candidates share qa_id %s", c.id)
		}
		seen[c.id] = true
		a, err := e.send(keyAdmin, "GET", "/v1/qa/"+c.id+"?project_id="+project, nil, "")
		if err == nil && a.status == http.StatusNotFound && !durable(c.acked) {
			lostCands++
			continue
		}
		if err != nil || a.status != http.StatusOK {
			t.Errorf("acknowledged candidate %s: %d %s %v", c.id, a.status, a.body, err)
			continue
		}
		var rr wire.RecordResponse
		a.decode(t, &rr)
		if rr.Record.Question != c.question {
			t.Errorf("candidate %s: question %q, want %q", c.id, rr.Record.Question, c.question)
		}
	}
	t.Logf("appendfsync %s: %d passes inside the window it may lose; %d candidates of that window missing", fsync, mayLose, lostCands)
}

// stallStore runs stall after every successful validation: Redis stalls
// between the write and the audit entry the service appends after it.
type stallStore struct {
	*redisstore.Store
	stall func()
	// withWrite: validations append their audit entry with the write
	// (RecordValidationAudited, as memex serve does on this store); else
	// the service appends it after the write (and the stall).
	withWrite bool
}

// RecordValidationAudited is the path memex serve takes on this store
// (withWrite), or RecordValidationBefore's.
func (s *stallStore) RecordValidationAudited(ctx context.Context, req core.ValidateRequest,
	entry func(before, after core.Record) core.AuditEntry) (core.Record, core.Record, bool, error) {
	if !s.withWrite {
		b, r, err := s.RecordValidationBefore(ctx, req)
		return b, r, false, err
	}
	b, r, audited, err := s.Store.RecordValidationAudited(ctx, req, entry)
	if err == nil && s.stall != nil {
		s.stall()
	}
	return b, r, audited, err
}

func (s *stallStore) RecordValidation(ctx context.Context, req core.ValidateRequest) (core.Record, error) {
	r, err := s.Store.RecordValidation(ctx, req)
	if err == nil && s.stall != nil {
		s.stall()
	}
	return r, err
}

// RecordValidationBefore is the path of a store without
// RecordValidationAudited.
func (s *stallStore) RecordValidationBefore(ctx context.Context, req core.ValidateRequest) (core.Record, core.Record, error) {
	b, r, err := s.Store.RecordValidationBefore(ctx, req)
	if err == nil && s.stall != nil {
		s.stall()
	}
	return b, r, err
}

// TestFaultStalledRedis: a Redis that accepts connections but does not
// answer (CLIENT PAUSE of writes, DEBUG SLEEP of everything) gets 503 +
// Retry-After within the request timeout, never a hang; once it answers
// again the same Idempotency-Key completes the write exactly once.
func TestFaultStalledRedis(t *testing.T) {
	const stallMS = 2500
	tests := []struct {
		name string
		// stall starts a stall of stallMS and returns a channel closed
		// when it is over.
		stall func(t *testing.T, srv *redistest.Server) <-chan struct{}
		// reads: whether reads stall too.
		reads bool
	}{
		{"client pause write", func(t *testing.T, srv *redistest.Server) <-chan struct{} {
			if out, err := srv.Cli("CLIENT", "PAUSE", fmt.Sprint(stallMS), "WRITE"); err != nil {
				t.Fatalf("CLIENT PAUSE: %v %s", err, out)
			}
			done := make(chan struct{})
			time.AfterFunc(stallMS*time.Millisecond, func() { close(done) })
			return done
		}, false},
		{"debug sleep", func(t *testing.T, srv *redistest.Server) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				if out, err := srv.Cli("DEBUG", "SLEEP", fmt.Sprintf("%.1f", stallMS/1000.0)); err != nil {
					t.Errorf("DEBUG SLEEP: %v %s", err, out)
				}
			}()
			// Return once the sleep has started: a PING no longer answers
			// within 100 ms (a fixed wait raced the sleep on a loaded machine).
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
				if !answersWithin(srv.Addr(), 100*time.Millisecond) {
					return done
				}
			}
			t.Fatal("DEBUG SLEEP did not start within 2 s")
			return done
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t, redistest.ServerOptions{Args: []string{"--enable-debug-command", "local"}})
			e := newEnvFor(t, openFaultStore(t, srv), withConfig(faultConfig))
			w := faultKeys()[0]
			const project = "f-stall"
			id := e.addQA(keyAdmin, project, "How does the service answer while Redis stalls?", "It gives up at the request timeout with 503.")
			validate := map[string]any{"project_id": project, "qa_id": id, "result": "pass", "signal_strength": "strong"}
			candidate := map[string]any{"project_id": project, "question": "Is a stalled candidate stored once?",
				"answer": "Yes, the retry with the same Idempotency-Key is deduplicated."}

			done := tc.stall(t, srv)
			checks := []struct {
				name, method, path string
				body               any
				idem               string
			}{
				{"validate", "POST", "/v1/qa/validate", validate, "stall-v"},
				{"candidate", "POST", "/v1/qa/candidates", candidate, "stall-c"},
			}
			if tc.reads {
				checks = append(checks,
					struct {
						name, method, path string
						body               any
						idem               string
					}{"get", "GET", "/v1/qa/" + id + "?project_id=" + project, nil, ""},
					struct {
						name, method, path string
						body               any
						idem               string
					}{"readyz", "GET", "/readyz", nil, ""})
			}
			for _, c := range checks {
				a, err := e.send(w, c.method, c.path, c.body, c.idem)
				if err != nil {
					t.Errorf("%s during the stall: %v after %s", c.name, err, a.took)
					continue
				}
				if err := unavailableShape(a); err != nil {
					t.Errorf("%s during the stall: %v", c.name, err)
				}
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the stall did not end")
			}
			// Same keys again: each write lands exactly once.
			var rr wire.RecordResponse
			deadline := time.Now().Add(3 * time.Second)
			for {
				a, err := e.send(w, "POST", "/v1/qa/validate", validate, "stall-v")
				if err == nil && a.status == http.StatusOK {
					a.decode(t, &rr)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("validate after the stall: %d %s %v", a.status, a.body, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got := e.record(project, id).SuccessCount; got != 1 {
				t.Errorf("success_count %d after a stalled validation and its retry, want 1", got)
			}
			c1 := e.must(http.StatusCreated, w, "POST", "/v1/qa/candidates", candidate, "Idempotency-Key", "stall-c")
			var res core.CandidateResult
			c1.decode(t, &res)
			if res.DeduplicatedInto != "" {
				t.Errorf("the stalled candidate's retry was deduplicated into %s: the stalled write was applied and its key not replayed", res.DeduplicatedInto)
			}
			e.must(http.StatusOK, keyAdmin, "GET", "/v1/qa/"+res.QAID+"?project_id="+project, nil)
		})
	}

	// Redis stalls right after a validation commits, before the service's
	// audit append (or with the entry appended in the write): the answer
	// still comes within the request timeout.
	for _, withWrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("stall before audit, entry with the write %v", withWrite), func(t *testing.T) {
			srv := redistest.StartServer(t, redistest.ServerOptions{})
			var stalls atomic.Int64
			store := &stallStore{Store: openFaultStore(t, srv), withWrite: withWrite, stall: func() {
				stalls.Add(1)
				_, _ = srv.Cli("CLIENT", "PAUSE", fmt.Sprint(stallMS), "WRITE")
			}}
			e := newEnvFor(t, store, withConfig(faultConfig))
			const project = "f-audit"
			id := e.addQA(keyAdmin, project, "Does a stalled audit append delay the answer?", "No, it is bounded by the request deadline.")
			a, err := e.send(faultKeys()[1], "POST", "/v1/qa/validate", map[string]any{"project_id": project, "qa_id": id,
				"result": "pass", "signal_strength": "strong"}, "audit-stall")
			if err != nil {
				t.Fatalf("validate: %v after %s", err, a.took)
			}
			if stalls.Load() != 1 {
				t.Fatalf("the stall ran %d times", stalls.Load())
			}
			if a.status != http.StatusOK {
				t.Errorf("validate committed before the stall: status %d %s, want 200", a.status, a.body)
			}
			if err := latencyBound(a); err != nil {
				t.Errorf("validate with a stalled audit append: %v", err)
			}
			_, _ = srv.Cli("CLIENT", "UNPAUSE")
		})
	}
}

// TestFaultReadyz: /readyz is 503 (+ Retry-After, the error shape) while
// Redis is down and 200 again within 2 s of Redis answering PING.
func TestFaultReadyz(t *testing.T) {
	srv := redistest.StartServer(t, redistest.ServerOptions{})
	e := newEnvFor(t, openFaultStore(t, srv), withConfig(faultConfig))
	e.must(http.StatusOK, Key{}, "GET", "/readyz", nil)
	srv.Kill()
	for i := range 3 {
		a, err := e.send(Key{}, "GET", "/readyz", nil, "")
		if err != nil {
			t.Fatalf("readyz %d while down: %v", i, err)
		}
		if err := unavailableShape(a); err != nil {
			t.Errorf("readyz %d while down: %v", i, err)
		}
		// healthz is liveness only: still 200.
		e.must(http.StatusOK, Key{}, "GET", "/healthz", nil)
	}
	srv.Restart()
	pinged := time.Now()
	for {
		a, err := e.send(Key{}, "GET", "/readyz", nil, "")
		if err == nil && a.status == http.StatusOK {
			t.Logf("ready %s after Redis answered PING", time.Since(pinged).Round(time.Millisecond))
			break
		}
		if time.Since(pinged) > 2*time.Second {
			t.Fatalf("readyz not 200 2 s after Redis answered PING: %d %s %v", a.status, a.body, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// answersWithin reports whether the Redis at addr answers a PING within d.
func answersWithin(addr string, d time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	return err == nil && n > 0
}
