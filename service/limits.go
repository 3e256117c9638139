package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// The bucket of failed authentications of one remote address: a burst of
// AuthFailBurst, then AuthFailRate per second.
const (
	AuthFailRate  = 1.0
	AuthFailBurst = 20
)

// maxBuckets bounds a limiter's buckets; past it the full ones are dropped.
const maxBuckets = 10000

// limiter is a token bucket per key id (or remote address).
type limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// allow takes a token for key; when none is left it returns how long until
// one is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.rate <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// prune drops the buckets that have refilled (mu held): they hold no state
// a new bucket would not.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// rateLimit answers 429 with Retry-After when the caller's bucket is empty.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		who := callerOf(c)
		if ok, wait := s.limiter.allow(who.id); !ok {
			s.metrics.rateLimited.WithLabelValues(who.id).Inc()
			return &rateLimitedError{retryAfter: wait}
		}
		return next(c)
	}
}

// checkQuota returns ErrTooLarge (413) when a candidate is over the
// project's byte quota, and hands its max_qas to the store, which checks
// it in the write that would add the QA (CandidateRequest.MaxQAs): a
// count kept here would hold for this process only, not across replicas.
func (s *Server) checkQuota(req *core.CandidateRequest) error {
	q := s.cfg.quotaFor(req.ProjectID)
	if n := contentBytes(req.Answer, req.Summary, req.Tags, req.Metadata); q.MaxAnswerBytes > 0 && n > q.MaxAnswerBytes {
		return fmt.Errorf("answer, summary, tags and metadata: %d bytes is over the project's quota of %d: %w", n, q.MaxAnswerBytes, core.ErrTooLarge)
	}
	req.MaxQAs = q.MaxQAs
	return nil
}

// contentBytes is what a QA stores besides its question: answer, summary,
// tags and metadata (as JSON), the measure of Quota.MaxAnswerBytes.
func contentBytes(answer, summary string, tags []string, md map[string]any) int {
	n := len(answer) + len(summary)
	for _, t := range tags {
		n += len(t)
	}
	return n + metadataBytes(md)
}

func metadataBytes(md map[string]any) int {
	if len(md) == 0 {
		return 0
	}
	b, err := json.Marshal(md)
	if err != nil {
		return 0
	}
	return len(b)
}

// checkPatchQuota applies the project's byte quota to a human edit: the
// record as it will be after the patch.
func (s *Server) checkPatchQuota(rec core.Record, req core.PatchRequest) error {
	q := s.cfg.quotaFor(req.ProjectID)
	if q.MaxAnswerBytes <= 0 {
		return nil
	}
	answer, summary, tags := rec.Answer, rec.Summary, rec.Tags
	if req.Answer != nil {
		answer = *req.Answer
	}
	if req.Summary != nil {
		summary = *req.Summary
	}
	if req.Tags != nil {
		tags = *req.Tags
	}
	if n := contentBytes(answer, summary, tags, rec.Metadata); n > q.MaxAnswerBytes {
		return fmt.Errorf("answer, summary, tags and metadata: %d bytes is over the project's quota of %d: %w", n, q.MaxAnswerBytes, core.ErrTooLarge)
	}
	return nil
}

// boundMatches keeps the leading matches whose size fits in max bytes (at
// least one): a search answer stays bounded whatever the records hold.
// A match's size counts its metadata as JSON; when an upper bound of every
// match's size (jsonBound) already fits, nothing is cut and the
// metadata is not encoded.
func boundMatches(ms []core.Match, max int) []core.Match {
	if matchesBound(ms) <= max {
		return ms
	}
	total := 0
	for i, m := range ms {
		total += matchSize(m, metadataBytes(m.Metadata))
		if total > max && i > 0 {
			return ms[:i]
		}
	}
	return ms
}

// matchSize is the size boundMatches counts for m, its metadata mdBytes.
func matchSize(m core.Match, mdBytes int) int {
	n := 512 + len(m.QAID) + len(m.Question) + len(m.Answer) + len(m.Summary) + mdBytes
	for _, t := range m.Tags {
		n += len(t) + 3
	}
	return n
}

// matchesBound is at least the total boundMatches counts for ms (MaxInt
// when a metadata value is of a type jsonBound does not know).
func matchesBound(ms []core.Match) int {
	total := 0
	for _, m := range ms {
		md, ok := jsonBound(m.Metadata)
		if !ok {
			return math.MaxInt
		}
		total += matchSize(m, md)
	}
	return total
}

// jsonBound is an upper bound of the length of v encoded by json.Marshal,
// for the types metadata holds (what JSON decodes to, and ints); ok is
// false for any other type. A string byte encodes to at most 6 bytes
// (\u00XX, or \ufffd for invalid UTF-8), a number to fewer than 32.
func jsonBound(v any) (n int, ok bool) {
	switch v := v.(type) {
	case nil, bool:
		return 5, true
	case string:
		return 2 + 6*len(v), true
	case float64, float32, int, int64, int32, uint, uint64, uint32:
		return 32, true
	case map[string]any:
		n = 2
		for k, e := range v {
			en, ok := jsonBound(e)
			if !ok {
				return 0, false
			}
			n += 2 + 6*len(k) + 2 + en
		}
		return n, true
	case []any:
		n = 2
		for _, e := range v {
			en, ok := jsonBound(e)
			if !ok {
				return 0, false
			}
			n += en + 1
		}
		return n, true
	}
	return 0, false
}

// idemCache replays the first response of an Idempotency-Key. It is
// bounded twice: in entries (max) and in the bytes of the response bodies
// it holds (maxBytes); past either bound the oldest finished entries go
// first (a retry of an evicted key runs again: the store dedupes its event
// id). Refusals (errors, reports stored with applied:false) are never kept.
type idemCache struct {
	ttl      time.Duration
	now      func() time.Time
	max      int
	maxBytes int64

	mu      sync.Mutex
	entries map[string]*idemEntry
	bytes   int64        // sum of len(body) of the finished entries
	order   []idemRecent // finished entries, oldest first (may hold stale keys)
}

type idemEntry struct {
	done    chan struct{}
	bodySum [sha256.Size]byte
	at      time.Time
	status  int
	body    []byte
	ok      bool
}

// idemRecent is one finished entry in completion order.
type idemRecent struct {
	key string
	e   *idemEntry
}

func newIdemCache(ttl time.Duration, maxBytes int64, now func() time.Time) *idemCache {
	return &idemCache{ttl: ttl, now: now, max: 100000, maxBytes: maxBytes, entries: map[string]*idemEntry{}}
}

// finish keeps a finished entry and evicts the oldest ones past the bounds
// (mu held).
func (ic *idemCache) finish(key string, e *idemEntry) {
	ic.bytes += int64(len(e.body))
	ic.order = append(ic.order, idemRecent{key, e})
	for len(ic.order) > 0 && (ic.bytes > ic.maxBytes || len(ic.entries) > ic.max) {
		old := ic.order[0]
		ic.order = ic.order[1:]
		ic.drop(old.key, old.e)
	}
	if len(ic.order) > 0 && cap(ic.order) > 4*len(ic.order)+64 {
		ic.order = append([]idemRecent(nil), ic.order...)
	}
}

// drop forgets key when it still holds e (mu held).
func (ic *idemCache) drop(key string, e *idemEntry) {
	if cur, ok := ic.entries[key]; ok && cur == e {
		delete(ic.entries, key)
		ic.bytes -= int64(len(e.body))
	}
}

// Bytes is the size of the response bodies the cache holds.
func (ic *idemCache) Bytes() int64 {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.bytes
}

// refusal reports whether a write's answer says it was not applied (a
// report kept in the audit log only): such answers are not replayed.
func refusal(v any) bool {
	switch r := v.(type) {
	case wire.RecordResponse:
		return r.Applied != nil && !*r.Applied
	case wire.HitResponse:
		return r.Updated == 0 && r.Ignored > 0
	}
	return false
}

// idempotencyKey reads and checks the Idempotency-Key header.
func idempotencyKey(c echo.Context) (string, error) {
	k := c.Request().Header.Get("Idempotency-Key")
	if k == "" {
		return "", nil
	}
	if len(k) > 255 {
		return "", core.Invalid("Idempotency-Key", "longer than 255 characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return "", core.Invalid("Idempotency-Key", "must be printable ASCII without spaces")
		}
	}
	return k, nil
}

// idempotent runs a write once per (key id, route, Idempotency-Key): the
// first result's status and body are replayed for 24 h, and the scoped key
// becomes the request's event id (the store dedupes it). A reuse with a
// different body is 409. Without the header fn runs with an empty event id.
func (s *Server) idempotent(c echo.Context, body []byte, fn func(eventID string) (int, any, error)) error {
	hk, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	if hk == "" {
		status, v, err := fn("")
		if err != nil {
			return err
		}
		return writeJSON(c, status, v)
	}
	scope := sha256.Sum256([]byte(callerOf(c).id + "\x00" + c.Request().Method + " " + c.Path() + "\x00" + c.Request().URL.RawQuery + "\x00" + hk))
	key := hex.EncodeToString(scope[:16])
	sum := sha256.Sum256(body)
	ic := s.idem
	var e *idemEntry
	for {
		ic.mu.Lock()
		var ok bool
		e, ok = ic.entries[key]
		if ok && ic.now().Sub(e.at) > ic.ttl {
			select {
			case <-e.done:
				delete(ic.entries, key)
				ok = false
			default:
			}
		}
		if !ok {
			e = &idemEntry{done: make(chan struct{}), bodySum: sum, at: ic.now()}
			ic.entries[key] = e
			ic.mu.Unlock()
			break
		}
		ic.mu.Unlock()
		select {
		case <-e.done:
		case <-c.Request().Context().Done():
			return c.Request().Context().Err()
		}
		if !e.ok {
			continue // the first attempt failed: this one runs
		}
		if !bytes.Equal(e.bodySum[:], sum[:]) {
			return fmt.Errorf("Idempotency-Key reused with a different body: %w", core.ErrConflict)
		}
		s.metrics.idemReplays.Inc()
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.Blob(e.status, echo.MIMEApplicationJSON, e.body)
	}
	status, v, err := fn("idem:" + key)
	var out []byte
	if err == nil {
		out, err = jsonBytes(v)
	}
	ic.mu.Lock()
	if err != nil || refusal(v) || int64(len(out)) > ic.maxBytes {
		// Failures and refusals are not replayed (a retry runs again), nor
		// is an answer larger than the whole cache.
		delete(ic.entries, key)
	} else {
		e.status, e.body, e.ok = status, out, true
		ic.finish(key, e)
	}
	ic.mu.Unlock()
	close(e.done)
	if err != nil {
		return err
	}
	return c.Blob(status, echo.MIMEApplicationJSON, out)
}

// memAudit is the audit log of a store that keeps none: the last n entries
// in memory (lost on restart; stores implementing core.Auditor persist).
type memAudit struct {
	mu      sync.Mutex
	n       int
	entries []core.AuditEntry
}

func newMemAudit(n int) *memAudit { return &memAudit{n: n} }

func (m *memAudit) AppendAudit(_ context.Context, e core.AuditEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	if len(m.entries) > m.n {
		m.entries = append(m.entries[:0:0], m.entries[len(m.entries)-m.n:]...)
	}
	return nil
}

func (m *memAudit) Audit(_ context.Context, projectID string, since time.Time, limit int) ([]core.AuditEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []core.AuditEntry
	for _, e := range m.entries {
		if (projectID == "" || e.ProjectID == projectID) && !e.Time.Before(since) {
			out = append(out, e)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out, nil
}
