package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/embedded"
	httpstore "github.com/memex-dev/memex/plugins/http"
	"github.com/memex-dev/memex/service"
)

// freeAddr is a local address nobody listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// serveAt starts memex serve (insecure local mode) over a fresh embedded
// store on addr and returns the store.
func serveAt(t *testing.T, addr string) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "served.db"), embedded.WithKeepOpen())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := service.DefaultConfig()
	cfg.InsecureLocal = true
	cfg.RequireReceipts = false
	cfg.ExpiryInterval = -1
	srv, err := service.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address %s was taken in between: %v", addr, err)
	}
	ts := httptest.NewUnstartedServer(srv)
	_ = ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	t.Cleanup(ts.Close)
	return st
}

func (c *cli) outboxStatus(store string) httpstore.OutboxStatus {
	c.t.Helper()
	var st httpstore.OutboxStatus
	out := c.mustRun("", "outbox", "status", "--json", "--store", store)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("outbox status --json: %v\n%s", err, out)
	}
	return st
}

func storedQuestions(t *testing.T, st *embedded.Store) []string {
	t.Helper()
	page, err := st.List(t.Context(), core.ListRequest{ProjectID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, r := range page.Items {
		qs = append(qs, r.Question)
	}
	return qs
}

// TestRunSpoolsWhileServiceDown is SPEC §10 "memory service unreachable":
// memex run still runs the agent, spools its records to the outbox, and
// memex outbox flush delivers them exactly once.
func TestRunSpoolsWhileServiceDown(t *testing.T) {
	c := newCLI(t)
	addr := freeAddr(t)
	store := "http://" + addr

	code, out, errOut := c.run("", "run", "--store", store, "--backend", agentPath(t), "--verify", "true", raceQuery)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (memory fails open); stderr: %s", code, errOut)
	}
	if !strings.Contains(out, "race detector") {
		t.Errorf("the agent did not run: %q", out)
	}
	if !strings.Contains(errOut, "spooled to the outbox") {
		t.Errorf("stderr does not report the spooled candidate: %s", errOut)
	}
	st := c.outboxStatus(store)
	if st.Pending != 1 || st.Dir != filepath.Join(c.env["XDG_DATA_HOME"], "memex", "outbox") {
		t.Fatalf("outbox status = %+v; want 1 pending in the data directory", st)
	}

	served := serveAt(t, addr)
	out = c.mustRun("", "outbox", "flush", "--json", "--store", store)
	var res httpstore.FlushResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Delivered != 1 || res.Remaining != 0 {
		t.Fatalf("outbox flush = %s (%v); want 1 delivered", out, err)
	}
	if qs := storedQuestions(t, served); len(qs) != 1 || qs[0] != raceQuery {
		t.Fatalf("service store holds %q; want the run's candidate once", qs)
	}
	out = c.mustRun("", "outbox", "flush", "--store", store)
	if !strings.Contains(out, "delivered: 0") {
		t.Errorf("second flush: %s", out)
	}
	if qs := storedQuestions(t, served); len(qs) != 1 {
		t.Errorf("service store holds %d QAs after a second flush, want 1", len(qs))
	}
	if st := c.outboxStatus(store); st.Pending != 0 {
		t.Errorf("pending after flush = %d", st.Pending)
	}
}

// TestNextRunFlushesOutbox: the run after an outage delivers what the
// earlier one spooled, before its own search.
func TestNextRunFlushesOutbox(t *testing.T) {
	c := newCLI(t)
	addr := freeAddr(t)
	store := "http://" + addr
	if code, _, errOut := c.run("", "run", "--store", store, "--backend", agentPath(t), "--verify", "true", raceQuery); code != 0 {
		t.Fatalf("run 1: exit %d: %s", code, errOut)
	}
	served := serveAt(t, addr)
	code, _, errOut := c.run("", "run", "--store", store, "--backend", agentPath(t), raceQuery)
	if code != 0 {
		t.Fatalf("run 2: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "delivered 1 spooled writes") {
		t.Errorf("run 2 did not report the flush: %s", errOut)
	}
	if qs := storedQuestions(t, served); len(qs) != 1 || qs[0] != raceQuery {
		t.Errorf("service store holds %q; want run 1's candidate", qs)
	}
}

func TestOutboxCommandErrors(t *testing.T) {
	c := newCLI(t)
	if code, _, errOut := c.run("", "outbox", "status"); code == 0 || !strings.Contains(errOut, "has no outbox") {
		t.Errorf("outbox on the embedded store: exit %d, %s", code, errOut)
	}
	if code, _, errOut := c.run("", "outbox", "purge"); code != exitUsage || !strings.Contains(errOut, "flush, status") {
		t.Errorf("outbox purge: exit %d, %s", code, errOut)
	}
}

// TestRunAddsOneMemoryTimeoutWhenServiceHangs: a service that accepts
// connections and never answers costs a run one memory.timeout in all
// (the start-of-run flush, the search and the writes together), not one
// per call.
func TestRunAddsOneMemoryTimeoutWhenServiceHangs(t *testing.T) {
	c := newCLI(t)
	addr := freeAddr(t)
	store := "http://" + addr
	// Spool one write so the next run has something to flush.
	if code, _, errOut := c.run("", "run", "--store", store, "--backend", agentPath(t), "--verify", "true", raceQuery); code != 0 {
		t.Fatalf("run 1: exit %d: %s", code, errOut)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address %s was taken in between: %v", addr, err)
	}
	stop := make(chan struct{})
	hang := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	_ = hang.Listener.Close()
	hang.Listener = l
	hang.Start()
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) })

	const timeout = time.Second
	c.env["MEMEX_MEMORY_TIMEOUT"] = timeout.String()
	code, _, errOut := c.run("", "run", "--explain", "--store", store, "--backend", agentPath(t), "--verify", "true", raceQuery)
	if code != 0 {
		t.Fatalf("run 2: exit %d: %s", code, errOut)
	}
	// memex's own share of the run (setup, pre and post: every call to the
	// service), from --explain: the agent's and the machine's time are not
	// in it, so the check is about the calls sharing one timeout.
	m := regexp.MustCompile(`memex's own (\S+)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("run 2 --explain shows no timing:\n%s", errOut)
	}
	own, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("memex's own %v", own)
	if own > timeout*3/2 {
		t.Errorf("a hung service cost the run %v of memex's own time (memory.timeout %v); want about one timeout", own, timeout)
	}
	if st := c.outboxStatus(store); st.Pending != 2 {
		t.Errorf("pending = %d; want run 1's and run 2's candidates spooled", st.Pending)
	}
}
