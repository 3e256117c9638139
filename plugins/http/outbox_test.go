package httpstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

// dedupServer plays memex serve's idempotency: a write is applied once per
// Idempotency-Key; a repeat returns the first result and changes nothing.
type dedupServer struct {
	mu       sync.Mutex
	applied  map[string]int // key → times applied (exactly once is 1)
	requests map[string]int // key → requests received
	order    []string       // keys in the order first applied
	bodies   map[string]map[string]any
	goneQA   string // validations of this qa_id get 404
	status   int    // when non-zero, every request gets this status
	// onApply runs after a write was applied, before the answer is sent.
	onApply func(key string, r *http.Request)
}

func newDedupServer() *dedupServer {
	return &dedupServer{applied: map[string]int{}, requests: map[string]int{}, bodies: map[string]map[string]any{}}
}

func (d *dedupServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	w.Header().Set("Content-Type", "application/json")
	d.mu.Lock()
	d.requests[key]++
	status, hook := d.status, d.onApply
	if status != 0 {
		d.mu.Unlock()
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"down"}}`))
		return
	}
	if key == "" || body["event_id"] != key {
		d.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"code":"invalid","message":"event_id: must equal the Idempotency-Key"}}`))
		return
	}
	if r.URL.Path == "/v1/qa/validate" && body["qa_id"] == d.goneQA {
		d.mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"qa gone"}}`))
		return
	}
	if d.applied[key] == 0 {
		d.order = append(d.order, key)
		d.bodies[key] = body
	}
	d.applied[key] = 1 // a repeated key changes nothing
	d.mu.Unlock()
	if hook != nil {
		hook(key, r)
	}
	switch r.URL.Path {
	case "/v1/qa/hit":
		_, _ = w.Write([]byte(`{"updated":1}`))
	case "/v1/qa/candidates":
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"qa_id":"qa-new","status":"candidate"}`))
	case "/v1/qa/validate":
		_, _ = w.Write([]byte(`{"record":{"qa_id":"` + body["qa_id"].(string) + `"}}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (d *dedupServer) snapshot() (applied, requests map[string]int, order []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	applied, requests = map[string]int{}, map[string]int{}
	for k, v := range d.applied {
		applied[k] = v
	}
	for k, v := range d.requests {
		requests[k] = v
	}
	return applied, requests, slices.Clone(d.order)
}

func (d *dedupServer) set(f func(d *dedupServer)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

func nopSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// newOutboxStore returns a store for baseURL spooling to dir.
func newOutboxStore(t *testing.T, baseURL, dir string, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithSleep(nopSleep)}, opts...)
	s, err := New(Config{BaseURL: baseURL, OutboxDir: dir, Retries: 1, Timeout: 5 * time.Second}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// downStore is a store whose service refuses connections.
func downStore(t *testing.T, baseURL, dir string) *Store {
	t.Helper()
	return newOutboxStore(t, baseURL, dir, WithHTTPClient(&http.Client{Transport: rtFunc(func(*http.Request) (*http.Response, error) {
		return nil, dialRefused()
	})}))
}

// spoolDown spools three writes through a store whose service is down and
// closes it, as a finished run would.
func spoolDown(t *testing.T, baseURL, dir string) []string {
	t.Helper()
	s := downStore(t, baseURL, dir)
	keys := spoolThree(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// spoolThree writes a hit, a candidate and a validation that all spool.
func spoolThree(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := t.Context()
	writes := []struct {
		key  string
		call func() error
	}{
		{"ev-hit-1", func() error {
			_, err := s.RecordHit(ctx, core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa-1", Shown: true, Used: true}}, EventID: "ev-hit-1"})
			return err
		}},
		{"ev-cand-1", func() error {
			_, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "acme", Question: "how to fix the race?", Answer: "use a mutex", EventID: "ev-cand-1"})
			return err
		}},
		{"ev-val-1", func() error {
			_, err := s.RecordValidation(ctx, core.ValidateRequest{ProjectID: "acme", QAID: "qa-1", Result: "pass", SignalStrength: "strong", EventID: "ev-val-1"})
			return err
		}},
	}
	var keys []string
	for _, w := range writes {
		err := w.call()
		var se *SpooledError
		if !errors.Is(err, ErrSpooled) || !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &se) || se.Key != w.key {
			t.Fatalf("write %s: err = %v, want a *SpooledError (ErrSpooled, ErrUnavailable) with its key", w.key, err)
		}
		keys = append(keys, w.key)
	}
	return keys
}

func TestOutboxClosedPortThenFlushExactlyOnce(t *testing.T) {
	addr := closedPort(t)
	base := "http://" + addr
	dir := filepath.Join(t.TempDir(), "outbox")

	s1 := newOutboxStore(t, base, dir)
	keys := spoolThree(t, s1)
	st, err := s1.OutboxStatus()
	if err != nil || st.Pending != 3 || st.Files != 1 {
		t.Fatalf("status = %+v, %v; want 3 pending in 1 file", st, err)
	}
	files, _ := outboxFiles(dir)
	for _, p := range append(files, dir) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode(), want)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	// The service comes up on the same address.
	ds := newDedupServer()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s was taken in between: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(ds)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	s2 := newOutboxStore(t, base, dir)
	delivered, remaining, err := s2.Flush(t.Context())
	if err != nil || delivered != 3 || remaining != 0 {
		t.Fatalf("Flush = %d, %d, %v; want 3, 0, nil", delivered, remaining, err)
	}
	applied, requests, order := ds.snapshot()
	if !slices.Equal(order, keys) {
		t.Errorf("delivery order = %v, want %v", order, keys)
	}
	for _, k := range keys {
		if applied[k] != 1 || requests[k] != 1 {
			t.Errorf("key %s: applied %d, requests %d; want 1, 1", k, applied[k], requests[k])
		}
	}
	if q := ds.bodies["ev-cand-1"]["question"]; q != "how to fix the race?" {
		t.Errorf("replayed candidate body question = %v", q)
	}
	// Nothing left: a second flush sends nothing.
	if d, r, err := s2.Flush(t.Context()); d != 0 || r != 0 || err != nil {
		t.Errorf("second Flush = %d, %d, %v", d, r, err)
	}
	if files, _ := outboxFiles(dir); len(files) != 0 {
		t.Errorf("outbox files left: %v", files)
	}
	if _, requests2, _ := ds.snapshot(); len(requests2) != 3 {
		t.Errorf("requests after the second flush: %v", requests2)
	}
}

func TestOutboxInterruptedFlushRepeatedIsExactlyOnce(t *testing.T) {
	ds := newDedupServer()
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	keys := spoolDown(t, srv.URL, dir)

	// The flush is interrupted after the service applied the second write
	// but before its answer arrived.
	ctx, cancel := context.WithCancel(t.Context())
	ds.set(func(d *dedupServer) {
		d.onApply = func(key string, r *http.Request) {
			if key == keys[1] {
				cancel()
				<-r.Context().Done()
			}
		}
	})
	s2 := newOutboxStore(t, srv.URL, dir)
	delivered, remaining, err := s2.Flush(ctx)
	if !errors.Is(err, context.Canceled) || delivered != 1 || remaining != 2 {
		t.Fatalf("interrupted Flush = %d, %d, %v; want 1, 2, context.Canceled", delivered, remaining, err)
	}
	ds.set(func(d *dedupServer) { d.onApply = nil })

	s3 := newOutboxStore(t, srv.URL, dir)
	delivered, remaining, err = s3.Flush(t.Context())
	if err != nil || delivered != 2 || remaining != 0 {
		t.Fatalf("repeated Flush = %d, %d, %v; want 2, 0, nil", delivered, remaining, err)
	}
	applied, requests, order := ds.snapshot()
	if !slices.Equal(order, keys) {
		t.Errorf("order = %v, want %v", order, keys)
	}
	for _, k := range keys {
		if applied[k] != 1 {
			t.Errorf("key %s applied %d times, want 1", k, applied[k])
		}
	}
	if requests[keys[0]] != 1 || requests[keys[1]] != 2 || requests[keys[2]] != 1 {
		t.Errorf("requests per key = %v; want the interrupted one re-sent once with its key", requests)
	}
}

func TestOutboxConcurrentFlushersOneWins(t *testing.T) {
	ds := newDedupServer()
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	keys := spoolDown(t, srv.URL, dir)

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ds.set(func(d *dedupServer) {
		d.onApply = func(string, *http.Request) {
			once.Do(func() { close(entered); <-release })
		}
	})
	type result struct {
		d, r int
		err  error
	}
	first := make(chan result, 1)
	go func() {
		d, r, err := newOutboxStore(t, srv.URL, dir).Flush(t.Context())
		first <- result{d, r, err}
	}()
	select {
	case <-entered:
	case res := <-first:
		t.Fatalf("first flusher never reached the service: %+v", res)
	case <-time.After(10 * time.Second):
		t.Fatal("first flusher never reached the service")
	}
	// Another store (another process, as far as flock is concerned).
	d, r, err := newOutboxStore(t, srv.URL, dir).Flush(t.Context())
	if !errors.Is(err, ErrFlushBusy) || d != 0 {
		t.Errorf("second flusher = %d, %d, %v; want ErrFlushBusy", d, r, err)
	}
	close(release)
	res := <-first
	if res.err != nil || res.d != 3 || res.r != 0 {
		t.Fatalf("first flusher = %+v", res)
	}
	applied, requests, _ := ds.snapshot()
	for _, k := range keys {
		if applied[k] != 1 || requests[k] != 1 {
			t.Errorf("key %s: applied %d requests %d", k, applied[k], requests[k])
		}
	}
}

func TestOutboxRejectedEntries(t *testing.T) {
	ds := newDedupServer()
	ds.goneQA = "qa-1"
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	spoolDown(t, srv.URL, dir)
	// An unreadable (torn) line in another file.
	if err := os.WriteFile(filepath.Join(dir, "outbox-00000000000000000001-1-torn.jsonl"), []byte(`{"v":1,"op":"hit","ke`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newOutboxStore(t, srv.URL, dir)
	res, err := s.FlushOutbox(t.Context())
	if !errors.Is(err, ErrRejected) || res.Delivered != 2 || res.Rejected != 2 || res.Remaining != 0 {
		t.Fatalf("FlushOutbox = %+v, %v; want 2 delivered, 2 rejected (404 and torn line), ErrRejected", res, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, rejectedFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(b)
	if len(lines) != 2 || !strings.Contains(string(b), `"key":"ev-val-1"`) || !strings.Contains(string(b), `"status":404`) {
		t.Errorf("rejected file:\n%s", b)
	}
	st, _ := s.OutboxStatus()
	if st.Rejected != 2 || st.Pending != 0 || st.Files != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestOutboxFlushStopsWhileUnavailable(t *testing.T) {
	ds := newDedupServer()
	ds.status = http.StatusServiceUnavailable
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	spoolDown(t, srv.URL, dir)
	files, _ := outboxFiles(dir)
	before, _ := os.ReadFile(files[0])

	d, r, err := newOutboxStore(t, srv.URL, dir).Flush(t.Context())
	if !errors.Is(err, core.ErrUnavailable) || d != 0 || r != 3 {
		t.Fatalf("Flush = %d, %d, %v; want 0, 3, ErrUnavailable", d, r, err)
	}
	after, _ := os.ReadFile(files[0])
	if string(before) != string(after) {
		t.Errorf("outbox file changed by a failed flush")
	}
	if _, requests, _ := ds.snapshot(); requests["ev-hit-1"] != 2 || requests["ev-cand-1"] != 0 {
		t.Errorf("requests = %v; want the first entry tried (1 retry), the rest untouched", requests)
	}
}

func TestOutboxLiveWriterFileIsLeftAlone(t *testing.T) {
	ds := newDedupServer()
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	writer := downStore(t, srv.URL, dir)
	spoolThree(t, writer) // its file stays open and locked

	flusher := newOutboxStore(t, srv.URL, dir)
	d, r, err := flusher.Flush(t.Context())
	if err != nil || d != 0 || r != 3 {
		t.Fatalf("Flush with a live writer = %d, %d, %v; want 0, 3, nil", d, r, err)
	}
	if _, requests, _ := ds.snapshot(); len(requests) != 0 {
		t.Fatalf("a live writer's entries were sent: %v", requests)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	if d, r, err := flusher.Flush(t.Context()); err != nil || d != 3 || r != 0 {
		t.Fatalf("Flush after the writer closed = %d, %d, %v", d, r, err)
	}
}

func TestOutboxOwnFileFlushedBySameStore(t *testing.T) {
	ds := newDedupServer()
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	// Down first, then up: the same Store spools, then flushes its own file.
	var up bool
	var mu sync.Mutex
	inner := &http.Client{}
	s := newOutboxStore(t, srv.URL, dir, WithHTTPClient(&http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			return nil, dialRefused()
		}
		return inner.Transport.RoundTrip(r)
	})}))
	inner.Transport = http.DefaultTransport
	spoolThree(t, s)
	mu.Lock()
	up = true
	mu.Unlock()
	if d, r, err := s.Flush(t.Context()); err != nil || d != 3 || r != 0 {
		t.Fatalf("Flush = %d, %d, %v", d, r, err)
	}
	// The cooldown ended with the successful flush: writes go out again.
	if _, err := s.RecordHit(t.Context(), core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "qa-2"}}, EventID: "ev-after"}); err != nil {
		t.Fatalf("write after the flush: %v", err)
	}
}

func TestOutboxWhatIsNotSpooled(t *testing.T) {
	dir := t.TempDir()
	hit := core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "a"}}}
	t.Run("no outbox", func(t *testing.T) {
		s, _, _ := newFake(t, Config{Retries: -1}, fail(dialRefused()))
		_, err := s.RecordHit(t.Context(), hit)
		if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, ErrSpooled) {
			t.Fatalf("err = %v; want ErrUnavailable, not spooled", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		hang := func(r *http.Request) (*http.Response, error) { <-r.Context().Done(); return nil, r.Context().Err() }
		s, _, _ := newFake(t, Config{OutboxDir: dir}, hang)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := s.RecordHit(ctx, hit)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrSpooled) {
			t.Fatalf("err = %v; want Canceled, not spooled", err)
		}
	})
	t.Run("4xx", func(t *testing.T) {
		s, _, _ := newFake(t, Config{OutboxDir: dir}, answer(404, `{"error":{"code":"not_found"}}`))
		if _, err := s.RecordHit(t.Context(), hit); !errors.Is(err, core.ErrNotFound) || errors.Is(err, ErrSpooled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("admin writes", func(t *testing.T) {
		s, _, _ := newFake(t, Config{OutboxDir: dir, Retries: -1}, fail(dialRefused()))
		if err := s.Delete(t.Context(), "acme", "a"); !errors.Is(err, core.ErrUnavailable) || errors.Is(err, ErrSpooled) {
			t.Fatalf("Delete err = %v", err)
		}
	})
	t.Run("compat write that may have arrived", func(t *testing.T) {
		s, _, _ := newFake(t, Config{OutboxDir: dir, Compat: true}, answer(503, ``))
		if _, err := s.RecordHit(t.Context(), hit); !errors.Is(err, core.ErrUnavailable) || errors.Is(err, ErrSpooled) {
			t.Fatalf("err = %v", err)
		}
	})
	if st, _ := (&Store{outbox: &outbox{dir: dir}, base: "http://memex.test"}).OutboxStatus(); st.Pending != 0 {
		t.Errorf("spooled %d writes that should not be", st.Pending)
	}
	t.Run("compat write that never left", func(t *testing.T) {
		s, _, _ := newFake(t, Config{OutboxDir: dir, Compat: true, Retries: -1}, fail(dialRefused()))
		if _, err := s.RecordHit(t.Context(), hit); !errors.Is(err, ErrSpooled) {
			t.Fatalf("err = %v, want spooled", err)
		}
	})
}

func TestOutboxCooldownSpoolsWithoutContactingTheService(t *testing.T) {
	s, rc, _ := newFake(t, Config{OutboxDir: t.TempDir(), Retries: -1}, fail(dialRefused()))
	spoolThree(t, s)
	if n := len(rc.requests()); n != 1 {
		t.Errorf("requests = %d; want 1 (the later writes spool during the cooldown)", n)
	}
}

func TestOutboxOtherTargetsLeftAlone(t *testing.T) {
	ds := newDedupServer()
	srv := httptest.NewServer(ds)
	defer srv.Close()
	dir := t.TempDir()
	spoolDown(t, "http://elsewhere.test", dir)
	s := newOutboxStore(t, srv.URL, dir)
	if d, r, err := s.Flush(t.Context()); err != nil || d != 0 || r != 0 {
		t.Fatalf("Flush = %d, %d, %v", d, r, err)
	}
	st, _ := s.OutboxStatus()
	if st.Other != 3 || st.Pending != 0 {
		t.Errorf("status = %+v; want 3 for another service", st)
	}
	if _, requests, _ := ds.snapshot(); len(requests) != 0 {
		t.Errorf("another service's writes were sent here: %v", requests)
	}
}

// TestOutboxDeliversOnlyWithinTheEventWindow: a write spooled less than
// core.EventRetryLimit ago is delivered; an older one is not sent (the
// service may have applied it and forgotten its event id) and moves to
// the rejected file.
func TestOutboxDeliversOnlyWithinTheEventWindow(t *testing.T) {
	spooled := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		after     time.Duration
		delivered int
	}{
		{"inside", core.EventRetryLimit - time.Minute, 3},
		{"past", core.EventRetryLimit + time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDedupServer()
			srv := httptest.NewServer(ds)
			defer srv.Close()
			dir := t.TempDir()
			down := newOutboxStore(t, srv.URL, dir, WithClock(func() time.Time { return spooled }),
				WithHTTPClient(&http.Client{Transport: rtFunc(func(*http.Request) (*http.Response, error) { return nil, dialRefused() })}))
			spoolThree(t, down)
			if err := down.Close(); err != nil {
				t.Fatal(err)
			}
			s := newOutboxStore(t, srv.URL, dir, WithClock(func() time.Time { return spooled.Add(tc.after) }))
			res, err := s.FlushOutbox(t.Context())
			if res.Delivered != tc.delivered || res.Rejected != 3-tc.delivered || res.Remaining != 0 || (err != nil) != (tc.delivered == 0) {
				t.Fatalf("FlushOutbox %s after spooling = %+v, %v; want %d delivered, the rest rejected", tc.after, res, err, tc.delivered)
			}
			if _, requests, _ := ds.snapshot(); len(requests) != tc.delivered {
				t.Errorf("the service got %d writes, want %d", len(requests), tc.delivered)
			}
			if tc.delivered == 0 {
				b, _ := os.ReadFile(filepath.Join(dir, rejectedFile))
				if len(splitLines(b)) != 3 || !strings.Contains(string(b), "could count it twice") {
					t.Errorf("rejected file:\n%s", b)
				}
			}
		})
	}
}
