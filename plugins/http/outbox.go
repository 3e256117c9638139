package httpstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// Outbox errors.
var (
	// ErrSpooled: the service could not take a post record (hit,
	// candidate, validation) now, and it was appended to the outbox; Flush
	// delivers it later. A *SpooledError wraps it and core.ErrUnavailable.
	ErrSpooled = errors.New("spooled to the outbox for later delivery")
	// ErrFlushBusy: another process (or goroutine) is flushing the outbox.
	ErrFlushBusy = errors.New("another flush of the outbox is running")
	// ErrRejected: spooled writes were refused for good — by the service
	// (4xx), or because they were spooled longer than core.EventRetryLimit
	// ago — and moved to the outbox's rejected file.
	ErrRejected = errors.New("spooled writes rejected by the service")
)

// SpooledError reports a write that went to the outbox. errors.Is matches
// ErrSpooled and core.ErrUnavailable (the memory was unavailable; the run
// goes on); Spooled lets callers that do not import this package (engine)
// tell it from a lost write.
type SpooledError struct {
	Op  string // "record hit", "record candidate", "record validation"
	Key string // its Idempotency-Key
	// Cause is why the service did not take it.
	Cause error
}

func (e *SpooledError) Error() string {
	return fmt.Sprintf("http: %s: spooled to the outbox for later delivery (key %s): %v", e.Op, e.Key, e.Cause)
}

// Unwrap matches ErrSpooled and core.ErrUnavailable (never the cause's
// context errors: the write is safe, not timed out).
func (e *SpooledError) Unwrap() []error { return []error{ErrSpooled, core.ErrUnavailable} }

// Spooled reports true: the write is kept for later delivery.
func (e *SpooledError) Spooled() bool { return true }

// Spools reports whether writes the service cannot take are kept in an
// outbox (engine asks, to send a run's records even after a failed search).
func (s *Store) Spools() bool { return s.outbox != nil }

// OutboxDir is the spool directory ("" when the outbox is off).
func (s *Store) OutboxDir() string {
	if s.outbox == nil {
		return ""
	}
	return s.outbox.dir
}

// entry is one line of an outbox file. The body is the request exactly as
// it was first sent (with its event_id); the API key is not stored.
type entry struct {
	V         int             `json:"v"`
	Op        string          `json:"op"` // hit, candidate, validate
	Key       string          `json:"key"`
	Target    string          `json:"target"` // the service's base URL
	SpooledAt time.Time       `json:"spooled_at"`
	Body      json.RawMessage `json:"body"`
}

// rejectedEntry is one line of the rejected file.
type rejectedEntry struct {
	entry
	RejectedAt time.Time `json:"rejected_at"`
	Status     int       `json:"status,omitempty"`
	Error      string    `json:"error"`
	Raw        string    `json:"raw,omitempty"` // a line that could not be read
}

// routeOf maps an outbox op to its route; only post records are spooled.
func routeOf(op string) (string, string, bool) {
	switch op {
	case opHit:
		return wire.RouteHit, "record hit", true
	case opCandidate:
		return wire.RouteCandidates, "record candidate", true
	case opValidate:
		return wire.RouteValidate, "record validation", true
	}
	return "", "", false
}

const (
	outboxPrefix = "outbox-"
	outboxSuffix = ".jsonl"
	flushLock    = ".flush.lock"
	rejectedFile = "rejected.jsonl"
)

// outbox is the spool of one Store. Each process appends to its own file
// (outbox-<unix nanos>-<pid>-<random>.jsonl, created 0600 under a temporary
// name, exclusively flocked, then renamed into place), one fsync'd JSON line
// per write. The lock is held until the file is sealed (Flush, Close, or the
// process ends), so a flusher never rewrites a file someone still appends to.
type outbox struct {
	dir string
	now func() time.Time

	mu   sync.Mutex
	f    *os.File
	path string
}

func (o *outbox) append(e entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		if err := o.create(); err != nil {
			return err
		}
	}
	// One write of one full line on an O_APPEND file, then fsync.
	if _, err := o.f.Write(line); err != nil {
		_ = o.sealLocked() // a torn line stays last in its file; the write's error is the one to report
		return err
	}
	if err := o.f.Sync(); err != nil {
		_ = o.sealLocked()
		return err
	}
	return nil
}

func (o *outbox) create() error {
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	name := fmt.Sprintf("%s%020d-%d-%s%s", outboxPrefix, o.now().UnixNano(), os.Getpid(), strings.ToLower(rand.Text()[:8]), outboxSuffix)
	tmp := filepath.Join(o.dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if ok, err := tryLock(f); err != nil || !ok {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("lock new outbox file: %v", err)
	}
	final := filepath.Join(o.dir, name)
	if err := os.Rename(tmp, final); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	syncDir(o.dir)
	o.f, o.path = f, final
	return nil
}

// seal closes this process's outbox file (releasing its lock); the next
// spooled write starts a new one.
func (o *outbox) seal() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sealLocked()
}

func (o *outbox) sealLocked() error {
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	o.f, o.path = nil, ""
	return err
}

// spool appends c to the outbox and returns the *SpooledError to report.
// When even that fails, the write is lost and the error says so.
func (s *Store) spool(op string, c call, cause error) error {
	e := entry{V: 1, Op: op, Key: c.key, Target: s.base, SpooledAt: s.now().UTC(), Body: c.body}
	if err := s.outbox.append(e); err != nil {
		return fmt.Errorf("http: %s: service unavailable (%v) and the outbox failed: %v: %w", c.op, cause, err, core.ErrUnavailable)
	}
	s.log.Info("memory write spooled to the outbox", "plugin", "http", "op", c.op, "key", c.key)
	return &SpooledError{Op: c.op, Key: c.key, Cause: cause}
}

// FlushResult is what one flush did.
type FlushResult struct {
	// Delivered writes were accepted by the service (2xx) and removed.
	Delivered int `json:"delivered"`
	// Remaining writes for this service are still spooled.
	Remaining int `json:"remaining"`
	// Rejected writes were refused for good (4xx other than 401/403/408/429),
	// unreadable or spooled longer than core.EventRetryLimit ago, and moved
	// to RejectedFile.
	Rejected     int    `json:"rejected"`
	RejectedFile string `json:"rejected_file,omitempty"`
}

// Flush delivers the spooled writes; see FlushOutbox. It satisfies the
// interface `memex run` asserts: interface{ Flush(ctx) (int, int, error) }.
func (s *Store) Flush(ctx context.Context) (delivered, remaining int, err error) {
	r, err := s.FlushOutbox(ctx)
	return r.Delivered, r.Remaining, err
}

// FlushOutbox replays the spooled writes addressed to this service, oldest
// first, each with its original Idempotency-Key, so delivery is exactly
// once even when a flush is interrupted and repeated (the service applies a
// key once within core.EventWindow). An entry is removed only after a 2xx;
// a permanent 4xx, or an entry spooled longer than core.EventRetryLimit
// ago (which the service may have applied and forgotten), moves it to the
// rejected file (reported with ErrRejected); an unavailable service,
// a 401/403 or the end of ctx stops the flush and keeps the rest, in order.
// Files still open in a live process are left for a later flush. One flush
// runs at a time across processes (ErrFlushBusy); entries for other
// services are left alone. Without an outbox it does nothing.
func (s *Store) FlushOutbox(ctx context.Context) (FlushResult, error) {
	var res FlushResult
	if s.outbox == nil {
		return res, nil
	}
	o := s.outbox
	files, err := outboxFiles(o.dir)
	if err != nil || len(files) == 0 {
		return res, err
	}
	lock, err := os.OpenFile(filepath.Join(o.dir, flushLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return res, fmt.Errorf("http: flush outbox: %w", err)
	}
	defer func() { _ = lock.Close() }() // closing releases the lock
	if ok, err := tryLock(lock); err != nil {
		return res, fmt.Errorf("http: flush outbox: lock: %w", err)
	} else if !ok {
		return res, fmt.Errorf("http: flush outbox: %w", ErrFlushBusy)
	}
	if err := o.seal(); err != nil {
		return res, fmt.Errorf("http: flush outbox: %w", err)
	}
	if files, err = outboxFiles(o.dir); err != nil {
		return res, err
	}
	var stop error
	for _, path := range files {
		if stop != nil {
			st, _ := scanFile(path, s.base)
			res.Remaining += st.pending
			continue
		}
		stop = s.flushFile(ctx, path, &res)
	}
	if stop == nil {
		s.setOffline(false)
	}
	var errs []error
	if stop != nil {
		errs = append(errs, fmt.Errorf("http: flush outbox: stopped with %d writes left: %w", res.Remaining, stop))
	}
	if res.Rejected > 0 {
		res.RejectedFile = filepath.Join(o.dir, rejectedFile)
		errs = append(errs, fmt.Errorf("http: flush outbox: %d writes refused, moved to %s: %w", res.Rejected, res.RejectedFile, ErrRejected))
	}
	return res, errors.Join(errs...)
}

// flushFile delivers one file's entries in order, rewriting the file
// (temp + fsync + rename) after every delivered or rejected entry, so a
// crash re-sends at most the entry in flight. It returns the error that
// stopped the flush.
func (s *Store) flushFile(ctx context.Context, path string, res *FlushResult) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer func() { _ = f.Close() }() // closing releases the lock
	if ok, err := tryLock(f); err != nil {
		return err
	} else if !ok {
		// A live process still appends to it.
		st, _ := scanFile(path, s.base)
		res.Remaining += st.pending
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	lines := splitLines(data)
	var keep [][]byte
	var stop error
	for i, line := range lines {
		if stop != nil {
			keep = append(keep, line)
			if e, ok := parseEntry(line); ok && e.Target == s.base {
				res.Remaining++
			}
			continue
		}
		e, ok := parseEntry(line)
		if ok && e.Target != s.base {
			keep = append(keep, line)
			continue
		}
		var rej *rejectedEntry
		if !ok {
			rej = &rejectedEntry{Error: "unreadable outbox line", Raw: shorten(string(line), 4096)}
		} else if age := s.now().Sub(e.SpooledAt); age > core.EventRetryLimit {
			rej = &rejectedEntry{entry: e, Error: fmt.Sprintf("spooled %s ago, longer than %s: the service may have applied it and forgotten its event id (core.EventWindow), so sending it again could count it twice",
				age.Round(time.Minute), core.EventRetryLimit)}
		} else {
			err := s.replay(ctx, e)
			switch {
			case err == nil:
				res.Delivered++
			case permanent(err):
				rej = &rejectedEntry{entry: e, Error: err.Error()}
				var se *StatusError
				if errors.As(err, &se) {
					rej.Status = se.Status
				}
			default:
				stop = err
				keep = append(keep, line)
				res.Remaining++
				continue
			}
		}
		if rej != nil {
			rej.RejectedAt = s.now().UTC()
			if err := s.appendRejected(*rej); err != nil {
				return err // keep the entry: nothing is lost
			}
			res.Rejected++
		}
		if err := rewrite(path, append(slices.Clip(keep), lines[i+1:]...)); err != nil {
			return err
		}
	}
	return stop
}

// replay sends one spooled entry as it was first sent.
func (s *Store) replay(ctx context.Context, e entry) error {
	route, op, _ := routeOf(e.Op)
	_, err := s.do(ctx, call{op: "flush " + op, method: http.MethodPost, path: route, body: e.Body, key: e.Key})
	s.note(err) // an outage found here spares the run's next calls the wait
	return err
}

// permanent: the service refused this entry for good. Unavailability,
// credentials (401/403: a config problem, not the entry's) and ctx end
// stop the flush instead.
func permanent(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, core.ErrUnavailable), errors.Is(err, core.ErrUnauthorized), errors.Is(err, core.ErrForbidden):
		return false
	}
	return errors.Is(err, core.ErrInvalid) || errors.Is(err, core.ErrNotFound) ||
		errors.Is(err, core.ErrConflict) || errors.Is(err, core.ErrTooLarge) || errors.Is(err, core.ErrSecret)
}

func (s *Store) appendRejected(r rejectedEntry) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.outbox.dir, rejectedFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func parseEntry(line []byte) (entry, bool) {
	var e entry
	if json.Unmarshal(line, &e) != nil || e.V != 1 || e.Key == "" || len(e.Body) == 0 {
		return entry{}, false
	}
	if _, _, ok := routeOf(e.Op); !ok {
		return entry{}, false
	}
	return e, true
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// rewrite replaces path with lines atomically (temp file, fsync, rename),
// or removes it when no line is left.
func rewrite(path string, lines [][]byte) error {
	if len(lines) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		syncDir(filepath.Dir(path))
		return nil
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".rewrite.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// outboxFiles lists the spool files, oldest first (names start with the
// creation time).
func outboxFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("http: outbox %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, outboxPrefix) && strings.HasSuffix(n, outboxSuffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}

type fileStats struct {
	pending, other, unreadable int
	oldest                     time.Time
}

func scanFile(path, target string) (fileStats, error) {
	var st fileStats
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	for _, line := range splitLines(data) {
		e, ok := parseEntry(line)
		switch {
		case !ok:
			st.unreadable++
		case e.Target == target:
			st.pending++
			if st.oldest.IsZero() || e.SpooledAt.Before(st.oldest) {
				st.oldest = e.SpooledAt
			}
		default:
			st.other++
		}
	}
	return st, nil
}

// OutboxStatus describes the outbox.
type OutboxStatus struct {
	Dir string `json:"dir"`
	// Pending writes wait for this service; Other for other services
	// (spooled while memex pointed elsewhere).
	Pending    int `json:"pending"`
	Other      int `json:"other"`
	Unreadable int `json:"unreadable"`
	// Rejected is the number of lines in the rejected file.
	Rejected int       `json:"rejected"`
	Files    int       `json:"files"`
	Oldest   time.Time `json:"oldest,omitzero"`
}

// OutboxStatus counts the spooled writes without sending anything.
func (s *Store) OutboxStatus() (OutboxStatus, error) {
	if s.outbox == nil {
		return OutboxStatus{}, nil
	}
	st := OutboxStatus{Dir: s.outbox.dir}
	files, err := outboxFiles(s.outbox.dir)
	if err != nil {
		return st, err
	}
	for _, path := range files {
		fs, err := scanFile(path, s.base)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return st, fmt.Errorf("http: outbox: %w", err)
		}
		st.Files++
		st.Pending += fs.pending
		st.Other += fs.other
		st.Unreadable += fs.unreadable
		if !fs.oldest.IsZero() && (st.Oldest.IsZero() || fs.oldest.Before(st.Oldest)) {
			st.Oldest = fs.oldest
		}
	}
	if data, err := os.ReadFile(filepath.Join(s.outbox.dir, rejectedFile)); err == nil {
		st.Rejected = len(splitLines(data))
	}
	return st, nil
}
