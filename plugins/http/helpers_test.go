package httpstore

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rtFunc is a fake http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// reply builds a response with a JSON body and header pairs.
func reply(status int, body string, header ...string) *http.Response {
	h := http.Header{}
	if body != "" {
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// seen is one request a fake transport received, body read.
type seen struct {
	method, path, query string
	header              http.Header
	body                map[string]any
	rawBody             string
	ctx                 context.Context
}

// recorder is a fake transport that records requests and answers from a
// script (the last answer repeats).
type recorder struct {
	mu      sync.Mutex
	reqs    []seen
	answers []func(*http.Request) (*http.Response, error)
}

func (rc *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	s := seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), ctx: r.Context()}
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		s.rawBody = string(b)
		_ = json.Unmarshal(b, &s.body)
	}
	rc.mu.Lock()
	n := len(rc.reqs)
	rc.reqs = append(rc.reqs, s)
	var a func(*http.Request) (*http.Response, error)
	if len(rc.answers) > 0 {
		a = rc.answers[min(n, len(rc.answers)-1)]
	}
	rc.mu.Unlock()
	if a == nil {
		return reply(200, `{}`), nil
	}
	return a(r)
}

func (rc *recorder) requests() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

func answer(status int, body string, header ...string) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return reply(status, body, header...), nil }
}

func fail(err error) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}

// sleeps records the waits between retries without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newFake returns a store over a fake transport answering with answers.
func newFake(tb testing.TB, cfg Config, answers ...func(*http.Request) (*http.Response, error)) (*Store, *recorder, *sleeps) {
	tb.Helper()
	rc := &recorder{answers: answers}
	sl := &sleeps{}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://memex.test"
	}
	s, err := New(cfg, WithHTTPClient(&http.Client{Transport: rc}), WithSleep(sl.sleep))
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, rc, sl
}

// dialRefused is the error a closed port gives.
func dialRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused", Addr: "127.0.0.1:1"}}
}

// closedPort returns the address of a local port nobody listens on.
func closedPort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func contextWithTimeout(tb testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(tb.Context(), d)
}
