package httpstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/memex-dev/memex/core"
)

// Defaults of Config.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultRetries  = 3
	DefaultCooldown = 30 * time.Second
	// CompatMaxLimit is the original service's largest search limit (it
	// answers 422 above it).
	CompatMaxLimit = 20
)

// Config configures a Store. It is plain data: cmd/memex fills it from the
// store URL, MEMEX_API_KEY and the config file.
type Config struct {
	// BaseURL is the service's root, e.g. "https://memex.example.com" (the
	// routes of SPEC §7 are appended to it; a trailing slash is ignored). It
	// must not carry credentials: use APIKey.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty. It is
	// never logged, never put in an error and never written to the outbox.
	APIKey string
	// Timeout bounds each HTTP attempt (0 → DefaultTimeout). The caller's
	// ctx bounds the whole call, retries included.
	Timeout time.Duration
	// Retries is how many times a failed attempt is retried (0 →
	// DefaultRetries; negative → never).
	Retries int
	// OutboxDir is the spool directory for writes the service could not
	// take (see Flush). Empty disables the outbox: such writes fail with
	// core.ErrUnavailable and are lost.
	OutboxDir string
	// Compat talks to the original (aduib-ai) memory service instead of
	// memex serve: search limits are clamped to 1–20, and writes are retried
	// and spooled only when they provably never reached the service (the
	// original ignores Idempotency-Key, so resending a write whose answer was
	// lost could count it twice). Responses of both kinds are understood
	// either way.
	Compat bool
	// Cooldown is how long, after the service was found unreachable, calls
	// fail at once (writes go straight to the outbox) instead of waiting for
	// the service again (0 → DefaultCooldown; negative → never). Flush
	// always tries the service.
	Cooldown time.Duration
}

// Option configures a Store's collaborators.
type Option func(*Store)

// WithHTTPClient sets the HTTP client (default: a client with no overall
// timeout; Config.Timeout bounds each attempt).
func WithHTTPClient(c *http.Client) Option { return func(s *Store) { s.client = c } }

// WithLogger sets the logger (default: silent). Log lines carry the
// operation, status and attempt, never payloads or the API key.
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithSleep replaces the wait between retries (tests). sleep must return
// ctx.Err() when ctx ends first.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(s *Store) { s.sleep = sleep }
}

// Store is a core.MemoryPlugin that talks to a remote memex service (or an
// original-compatible one) over HTTP. It is safe for concurrent use.
type Store struct {
	cfg    Config
	base   string // BaseURL without a trailing slash
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error

	offMu        sync.Mutex
	offlineUntil time.Time

	outbox *outbox // nil when Config.OutboxDir is empty
}

var (
	_ core.MemoryPlugin  = (*Store)(nil)
	_ core.Getter        = (*Store)(nil)
	_ core.Lister        = (*Store)(nil)
	_ core.Deleter       = (*Store)(nil)
	_ core.Patcher       = (*Store)(nil)
	_ core.Expirer       = (*Store)(nil)
	_ core.Statser       = (*Store)(nil)
	_ core.Pinger        = (*Store)(nil)
	_ core.ProjectLister = (*Store)(nil)
	_ core.Importer      = (*Store)(nil)
)

// New returns a Store for cfg. It does not contact the service.
func New(cfg Config, opts ...Option) (*Store, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http: base URL must be http://host[:port][/path] or https://…: %w", core.ErrInvalid)
	}
	if u.User != nil {
		return nil, fmt.Errorf("http: base URL must not hold credentials (use the API key): %w", core.ErrInvalid)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("http: base URL must not have a query or fragment: %w", core.ErrInvalid)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Cooldown == 0 {
		cfg.Cooldown = DefaultCooldown
	}
	s := &Store{cfg: cfg, base: u.String(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	if cfg.OutboxDir != "" {
		s.outbox = &outbox{dir: cfg.OutboxDir, now: s.now}
	}
	return s, nil
}

// Name is "http".
func (s *Store) Name() string { return "http" }

// BaseURL is the service root the store talks to.
func (s *Store) BaseURL() string { return s.base }

// Close releases the outbox file this process spooled to (so a later Flush,
// from this process or another, may deliver it). The Store must not be used
// afterwards.
func (s *Store) Close() error {
	if s.outbox == nil {
		return nil
	}
	return s.outbox.seal()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// offline reports whether the service was found unreachable within the
// cooldown.
func (s *Store) offline() bool {
	if s.cfg.Cooldown < 0 {
		return false
	}
	s.offMu.Lock()
	defer s.offMu.Unlock()
	return s.now().Before(s.offlineUntil)
}

func (s *Store) setOffline(down bool) {
	if s.cfg.Cooldown < 0 {
		return
	}
	s.offMu.Lock()
	defer s.offMu.Unlock()
	if down {
		s.offlineUntil = s.now().Add(s.cfg.Cooldown)
	} else {
		s.offlineUntil = time.Time{}
	}
}

// newKey returns a fresh idempotency key for a write that has no EventID.
func newKey() string { return "ev-" + strings.ToLower(rand.Text()) }

// backoff is the wait before retry n (0-based): exponential from 100 ms,
// capped at 2 s, with jitter in [d/2, d).
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n, 5)
	d = min(d, 2*time.Second)
	return d/2 + mrand.N(d/2)
}

// errOffline is the cause reported while the cooldown lasts.
var errOffline = errors.New("service unreachable a moment ago (cooling down)")
