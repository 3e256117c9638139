package httpstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// maxResponseBytes bounds a response body read into memory.
const maxResponseBytes = 32 << 20

// call is one logical request; do sends it, retrying as its kind allows.
type call struct {
	op     string // "search", "record hit", ... (for errors and logs)
	method string
	path   string // escaped path below the base URL
	query  url.Values
	body   []byte // nil for GET/DELETE
	key    string // Idempotency-Key; non-empty for every write
}

func (c call) write() bool { return c.key != "" }

// response is a received answer with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// transportError is a failure below HTTP: the request got no answer.
// neverSent is true when the connection could not even be made (the write
// provably did not reach the service).
type transportError struct {
	op, method, path string
	cause            error
	neverSent        bool
	timeout          bool
}

func (e *transportError) Error() string {
	what := "unreachable"
	if e.timeout {
		what = "timed out"
	}
	return fmt.Sprintf("http: %s: %s %s: %s: %v", e.op, e.method, e.path, what, e.cause)
}

func (e *transportError) Unwrap() error { return core.ErrUnavailable }

// do sends c and returns the 2xx answer (the original's in-body errors
// already turned into errors). Reads, and writes (which all carry an
// Idempotency-Key), are retried on ErrUnavailable with exponential backoff
// and jitter, honouring Retry-After; other 4xx are never retried. In Compat
// mode writes are retried only when they provably never reached the
// service. A cancelled ctx returns an error wrapping ctx.Err() at once.
func (s *Store) do(ctx context.Context, c call) (response, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return response{}, ctxErr(c.op, err)
		}
		resp, err := s.once(ctx, c)
		if err == nil {
			err = checkBody(c.op, resp)
		}
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil || !s.retryable(c, err) || attempt >= s.cfg.Retries {
			return resp, err
		}
		wait := backoff(attempt)
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			wait = se.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// The caller's deadline ends before the next attempt could start.
			return resp, err
		}
		s.log.Debug("memory request failed; retrying", "plugin", "http", "op", c.op, "attempt", attempt+1, "wait", wait, "error", err)
		if serr := s.sleep(ctx, wait); serr != nil {
			return resp, ctxErr(c.op, serr)
		}
	}
}

func (s *Store) retryable(c call, err error) bool {
	if !errors.Is(err, core.ErrUnavailable) {
		return false
	}
	if !c.write() || !s.cfg.Compat {
		return true
	}
	var te *transportError
	return errors.As(err, &te) && te.neverSent
}

// once makes one attempt, bounded by Config.Timeout.
func (s *Store) once(ctx context.Context, c call) (response, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	u := s.base + c.path
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(actx, c.method, u, body)
	if err != nil {
		return response{}, fmt.Errorf("http: %s: build request: %w", c.op, core.ErrInvalid)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "memex-httpstore/1")
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	}
	if c.key != "" {
		req.Header.Set(wire.HeaderIdempotencyKey, c.key)
	}
	start := s.now()
	hr, err := s.client.Do(req)
	if err != nil {
		return response{}, s.transportErr(ctx, actx, c, err)
	}
	defer func() { _ = hr.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(hr.Body, maxResponseBytes+1))
	if err != nil {
		return response{}, s.transportErr(ctx, actx, c, err)
	}
	if len(b) > maxResponseBytes {
		return response{}, fmt.Errorf("http: %s: response larger than %d bytes: %w", c.op, maxResponseBytes, core.ErrUnavailable)
	}
	resp := response{status: hr.StatusCode, header: hr.Header, body: b}
	s.log.Debug("memory request", "plugin", "http", "op", c.op, "status", hr.StatusCode,
		"duration", s.now().Sub(start), "request_id", hr.Header.Get(wire.HeaderRequestID))
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		return resp, statusError(c.op, hr.StatusCode, hr.Header, b, s.now())
	}
	return resp, nil
}

// transportErr classifies a failure to get an answer. The URL (which may
// hold query text) is left out of the message.
func (s *Store) transportErr(ctx, actx context.Context, c call, err error) error {
	if ctx.Err() != nil {
		return ctxErr(c.op, ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	te := &transportError{op: c.op, method: c.method, path: c.path, cause: err}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		te.neverSent = true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		te.neverSent = true
	}
	if actx.Err() != nil {
		te.timeout = true
		te.cause = fmt.Errorf("no answer within %s", s.cfg.Timeout)
	}
	return te
}

// parseRetryAfter reads Retry-After (seconds or an HTTP date), capped at a
// minute; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), time.Minute)
}
