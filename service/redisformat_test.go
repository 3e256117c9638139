package service

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/wire"
)

// logBuffer collects a server's log lines; the server writes from its
// request goroutines while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestReadyzFollowsRedisFormat: a running service on the Redis store
// follows the store's format mark (docs/REDIS.md, "Format versions"). A
// mark above redisstore.FormatVersion turns /readyz to 503 — the answer of
// any store outage: Retry-After and the error code "unavailable" — and from
// then on the service's writes of QAs are refused with 503, storing
// nothing, while reads and receipts still work; once the mark is back at
// FormatVersion, /readyz is 200 again and the same writes succeed. When
// the test Redis URL has a password, no answer or log line carries it.
func TestReadyzFollowsRedisFormat(t *testing.T) {
	rawURL := redistest.URL(t)
	prefix := redistest.Prefix(t)
	store, err := redisstore.Open(context.Background(), rawURL, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	formatKey := prefix + ":format"
	newer := redisstore.FormatVersion + 1
	setFormat := func(v int) {
		t.Helper()
		if err := rdb.Set(t.Context(), formatKey, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	logs := &logBuffer{}
	voter := Key{ID: "voter", Role: RoleAgent, Projects: []string{"a-*"}}
	e := newEnvFor(t, store,
		withConfig(func(c *Config) { c.Keys = append(c.Keys, withHash(voter)...) }),
		withOpts(WithLogger(slog.New(slog.NewTextHandler(logs, nil)))))
	var answers []resp
	send := func(k Key, method, path string, body any) resp {
		t.Helper()
		r := e.do(k, method, path, body)
		answers = append(answers, r)
		return r
	}
	unavailable := func(what string, r resp) {
		t.Helper()
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("%s with the store in format %d: status %d, want 503; body %s", what, newer, r.status, r.body)
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", what)
		}
		if code := r.apiErr(t).Code; code != "unavailable" {
			t.Errorf("%s: error code %q, want unavailable", what, code)
		}
	}
	search := func() string {
		t.Helper()
		r := send(voter, "POST", "/v1/qa/search", map[string]any{"project_id": "a-proj", "query": "redis format mark"})
		var ms []core.Match
		r.decode(t, &ms)
		if r.status != http.StatusOK || len(ms) != 1 || ms[0].ReceiptID == "" {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
		return ms[0].ReceiptID
	}
	candidate := map[string]any{"project_id": "a-proj", "question": "What does memex do with a newer store?",
		"answer": "It refuses to write it until it is upgraded.", "tags": []string{"test"}}

	// 1. The store in this memex's format.
	if r := send(Key{}, "GET", "/readyz", nil); r.status != http.StatusOK {
		t.Fatalf("readyz on a fresh store: %d %s", r.status, r.body)
	}
	id := e.addQA(keyAgentA, "a-proj", "What does the redis format mark hold?", "The layout version of the store's keys.")
	if got, err := rdb.Get(t.Context(), formatKey).Result(); err != nil || got != strconv.Itoa(redisstore.FormatVersion) {
		t.Fatalf("%s = %q (%v), want %d", formatKey, got, err, redisstore.FormatVersion)
	}

	// 2. A newer memex marks the store with its format.
	setFormat(newer)
	unavailable("readyz", send(Key{}, "GET", "/readyz", nil))
	unavailable("candidate", send(keyAgentA, "POST", "/v1/qa/candidates", candidate))
	receipt := search() // reads and receipts are not gated
	unavailable("validation", send(voter, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id,
		"result": "pass", "signal_strength": "strong", "receipt_id": receipt}))
	page, err := store.List(t.Context(), core.ListRequest{ProjectID: "a-proj"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].QAID != id {
		t.Errorf("the refused candidate was stored: %+v", page.Items)
	}
	if rec := e.record("a-proj", id); rec.SuccessCount != 0 {
		t.Errorf("the refused validation was stored: success count %d", rec.SuccessCount)
	}
	if got, err := rdb.Get(t.Context(), formatKey).Result(); err != nil || got != strconv.Itoa(newer) {
		t.Errorf("the service changed the newer mark: %s = %q (%v)", formatKey, got, err)
	}
	if l := logs.String(); !strings.Contains(l, fmt.Sprintf("is in format %d", newer)) {
		t.Errorf("the refusal is not in the log: %s", l)
	}

	// 3. The mark back at this memex's format.
	setFormat(redisstore.FormatVersion)
	if r := send(Key{}, "GET", "/readyz", nil); r.status != http.StatusOK {
		t.Fatalf("readyz with the store back in format %d: %d %s", redisstore.FormatVersion, r.status, r.body)
	}
	r := send(keyAgentA, "POST", "/v1/qa/candidates", candidate)
	var cr core.CandidateResult
	r.decode(t, &cr)
	if r.status != http.StatusCreated || cr.QAID == "" {
		t.Fatalf("candidate with the store back in format %d: %d %s", redisstore.FormatVersion, r.status, r.body)
	}
	// The refused validation gave its receipt back.
	r = send(voter, "POST", "/v1/qa/validate", map[string]any{"project_id": "a-proj", "qa_id": id,
		"result": "pass", "signal_strength": "strong", "receipt_id": receipt})
	var rr wire.RecordResponse
	r.decode(t, &rr)
	if r.status != http.StatusOK || rr.Applied == nil || !*rr.Applied || rr.Record.SuccessCount != 1 {
		t.Errorf("validation with the store back in format %d: %d %s", redisstore.FormatVersion, r.status, r.body)
	}
	if page, err := store.List(t.Context(), core.ListRequest{ProjectID: "a-proj"}); err != nil || len(page.Items) != 2 {
		t.Errorf("after the mark is back: %d QAs (%v), want 2", len(page.Items), err)
	}

	// No answer or log line names the URL's password.
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		t.Logf("the test Redis URL has no password: the check that answers and logs never carry it is skipped (%s may name a URL with one)", redistest.EnvURL)
		return
	}
	for _, a := range answers {
		if bytes.Contains(a.body, []byte(pw)) {
			t.Errorf("an answer carries the Redis password: %d %s", a.status, a.body)
		}
		for name, vs := range a.header {
			if strings.Contains(strings.Join(vs, " "), pw) {
				t.Errorf("header %s carries the Redis password", name)
			}
		}
	}
	if strings.Contains(logs.String(), pw) {
		t.Errorf("the log carries the Redis password")
	}
}
