package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// Compile-time checks of the capabilities the store implements.
var (
	_ core.MemoryPlugin    = (*Store)(nil)
	_ core.Getter          = (*Store)(nil)
	_ core.Lister          = (*Store)(nil)
	_ core.Deleter         = (*Store)(nil)
	_ core.Patcher         = (*Store)(nil)
	_ core.Importer        = (*Store)(nil)
	_ core.Expirer         = (*Store)(nil)
	_ core.Statser         = (*Store)(nil)
	_ core.Pinger          = (*Store)(nil)
	_ core.Receipts        = (*Store)(nil)
	_ core.ReceiptRestorer = (*Store)(nil)
	_ core.Auditor         = (*Store)(nil)
	_ core.ProjectLister   = (*Store)(nil)
	_ io.Closer            = (*Store)(nil)
)

// DefaultPrefix is the key prefix when WithPrefix is not given.
const DefaultPrefix = "memex"

// Client timeouts Open sets (a client passed to New keeps its own).
const (
	DialTimeout         = 2 * time.Second
	ReadTimeout         = 2 * time.Second
	WriteTimeout        = 2 * time.Second
	PoolTimeout         = 2 * time.Second
	ClusterMaxRedirects = 8
	ClusterReloadEvery  = 2 * time.Second
	eventTTL            = core.EventWindow
	defaultAuditCap     = 10_000
	maxCommitAttempts   = 100
	maxCommitBackoff    = 20 * time.Millisecond
	lockStripes         = 256
)

// Option configures a Store.
type Option func(*config)

type config struct {
	prefix   string
	clock    func() time.Time
	logger   *slog.Logger
	params   trust.Params
	auditCap int64
	cache    int64
}

// WithPrefix sets the key prefix (default "memex").
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithClock injects the clock used for timestamps, freshness and expiry.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithLogger sets the logger (silent by default).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithTrustParams sets the trust model's parameters (default
// trust.DefaultParams: the service flavour, CountCreator false).
func WithTrustParams(p trust.Params) Option { return func(c *config) { c.params = p } }

// WithAuditCap sets how many audit entries a project keeps (default 10,000,
// approximate: the stream is trimmed with MAXLEN ~).
func WithAuditCap(n int64) Option { return func(c *config) { c.auditCap = n } }

// DefaultIndexCache is the default bound of the search index cache.
const DefaultIndexCache = 128 << 20

// WithIndexCache bounds, in bytes, the process-local cache of the index
// data search reads (posting lists, field lengths, doc ids; never records),
// kept exact by each project's index version (cache.go). 0 disables it;
// the default is DefaultIndexCache.
func WithIndexCache(bytes int64) Option { return func(c *config) { c.cache = bytes } }

// Store is the Redis memory store. It is safe for concurrent use.
type Store struct {
	core.LocalGrader // TaskGrade

	rdb      redis.UniversalClient
	owned    bool
	k        keys
	cfg      config
	ledger   *ledger.Ledger
	analyzer *retrieval.Analyzer
	scorer   *retrieval.Scorer
	cache    *indexCache // nil: off
	heads    *headMemo   // nil: off
	// scratch holds the *scanScratch of searches done, for the next ones.
	scratch sync.Pool
	// headReads counts the records searches read from Redis to rank on
	// (the heads the memo did not hold current).
	headReads atomic.Int64
	// repReads counts the reputation fields searches read from Redis (the
	// ones the memo did not hold current).
	repReads atomic.Int64
	// batch sends the pipelines of concurrent callers together (batch.go).
	batch *batcher

	// locks serialise this process's writers of one QA so that optimistic
	// commits rarely conflict (other processes are still caught by the
	// version check).
	locks [lockStripes]chan struct{}
	// projects already registered in the project set by this Store.
	known sync.Map
	// idsReady: the qa_id index is built (ids.go); idsMu orders its build.
	idsReady atomic.Bool
	idsMu    sync.Mutex
	// last: the records this process last wrote, decoded (lastWritten).
	last lastWritten
	// refused: the store's format is newer than this package's, as the
	// last check (checkFormat) found it; nil when it is not.
	refused atomic.Pointer[FormatError]

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New returns a store over a ready client, which the store never closes.
// New does no I/O: Ping checks that Redis answers and that the store's
// format is one this package reads (Open does so before it returns).
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("redis: new: nil client: %w", core.ErrInvalid)
	}
	cfg := config{prefix: DefaultPrefix, clock: time.Now, params: trust.DefaultParams(), auditCap: defaultAuditCap, cache: DefaultIndexCache}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.prefix == "" || strings.ContainsAny(cfg.prefix, "{}") {
		return nil, fmt.Errorf("redis: new: %w", core.Invalid("prefix", "must be non-empty without braces"))
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	cfg.logger = cfg.logger.With("component", "redis")
	a := retrieval.NewAnalyzer()
	s := &Store{
		rdb:      client,
		k:        keys{prefix: cfg.prefix},
		cfg:      cfg,
		ledger:   ledger.New(trust.New(cfg.params)),
		analyzer: a,
		scorer:   retrieval.NewScorer(a, retrieval.DefaultParams()),
		cache:    newIndexCache(cfg.cache),
		heads:    newHeadMemo(cfg.cache / 4),
		batch:    newBatcher(client, batchesInFlight),
		stop:     make(chan struct{}),
	}
	for i := range s.locks {
		s.locks[i] = make(chan struct{}, 1)
	}
	return s, nil
}

// Open parses a store URL, builds the matching client with explicit
// timeouts and returns a store that closes the client on Close:
//
//	redis://[user:pass@]host:port[/db]      one server
//	rediss://...                            the same over TLS
//	redis+sentinel://[user:pass@]h1:p1,h2:p2/<master-name>[/db]
//	redis+cluster://[user:pass@]h1:p1,h2:p2 a Redis Cluster
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	client, cluster, err := newClient(rawURL)
	if err != nil {
		return nil, err
	}
	s, err := New(client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	s.owned = true
	if cluster != nil {
		s.wg.Add(1)
		go s.reloadLoop(cluster)
	}
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// reloadLoop refreshes the cluster's slot map every ClusterReloadEvery so a
// failover is seen quickly (go-redis v9 has no option for it).
func (s *Store) reloadLoop(c *redis.ClusterClient) {
	defer s.wg.Done()
	t := time.NewTicker(ClusterReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), ClusterReloadEvery)
			c.ReloadState(ctx)
			cancel()
		}
	}
}

// urlParts splits scheme://[user:pass@]hosts[/path].
type urlParts struct {
	scheme, user, pass string
	hosts              []string
	path               []string
}

func splitURL(raw string) (urlParts, error) {
	var u urlParts
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return u, core.Invalid("store", "must be a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL")
	}
	u.scheme = strings.ToLower(scheme)
	rest, _, _ = strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		info := authority[:i]
		authority = authority[i+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		if !hasPass {
			pass, user = user, ""
		}
		u.user, u.pass = user, pass
	}
	for h := range strings.SplitSeq(authority, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "6379")
		}
		u.hosts = append(u.hosts, h)
	}
	if len(u.hosts) == 0 {
		return u, core.Invalid("store", "names no host")
	}
	for p := range strings.SplitSeq(path, "/") {
		if p != "" {
			u.path = append(u.path, p)
		}
	}
	return u, nil
}

func parseDB(s string) (int, error) {
	db, err := strconv.Atoi(s)
	if err != nil || db < 0 {
		return 0, core.Invalid("store", "database must be a number")
	}
	return db, nil
}

// newClient builds the client for a store URL. The error never contains
// the URL (it may hold a password).
func newClient(raw string) (redis.UniversalClient, *redis.ClusterClient, error) {
	u, err := splitURL(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("redis: open: %w", err)
	}
	switch u.scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("redis: open: %w", core.Invalid("store", "malformed redis URL"))
		}
		for _, d := range []struct {
			at  *time.Duration
			def time.Duration
		}{{&o.DialTimeout, DialTimeout}, {&o.ReadTimeout, ReadTimeout}, {&o.WriteTimeout, WriteTimeout}, {&o.PoolTimeout, PoolTimeout}} {
			if *d.at == 0 {
				*d.at = d.def // unless the URL sets it
			}
		}
		o.ContextTimeoutEnabled = true
		o.MaxRetries = 2
		return redis.NewClient(o), nil, nil
	}
	o := &redis.UniversalOptions{
		Addrs:                 u.hosts,
		Username:              u.user,
		Password:              u.pass,
		DialTimeout:           DialTimeout,
		ReadTimeout:           ReadTimeout,
		WriteTimeout:          WriteTimeout,
		PoolTimeout:           PoolTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            2,
	}
	if strings.HasPrefix(u.scheme, "rediss+") {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch u.scheme {
	case "redis+sentinel", "rediss+sentinel":
		if len(u.path) < 1 || len(u.path) > 2 {
			return nil, nil, fmt.Errorf("redis: open: %w", core.Invalid("store", "redis+sentinel URL needs /<master-name>[/db]"))
		}
		o.MasterName, o.SentinelUsername, o.SentinelPassword = u.path[0], u.user, u.pass
		if len(u.path) == 2 {
			if o.DB, err = parseDB(u.path[1]); err != nil {
				return nil, nil, fmt.Errorf("redis: open: %w", err)
			}
		}
		return redis.NewUniversalClient(o), nil, nil
	case "redis+cluster", "rediss+cluster":
		if len(u.path) > 0 {
			return nil, nil, fmt.Errorf("redis: open: %w", core.Invalid("store", "redis+cluster URL takes no path (cluster has one database)"))
		}
		o.IsClusterMode, o.MaxRedirects = true, ClusterMaxRedirects
		c := redis.NewClusterClient(o.Cluster())
		return c, c, nil
	}
	return nil, nil, fmt.Errorf("redis: open: %w", core.Invalid("store", "unknown scheme (want redis, rediss, redis+sentinel or redis+cluster)"))
}

// Name is "redis".
func (s *Store) Name() string { return "redis" }

// Close stops the cluster reload loop and audit appends, and closes the
// client when Open made it. A client passed to New is left open.
func (s *Store) Close() error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		if s.owned {
			err = s.rdb.Close()
		}
	})
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redis: close: %s", err.Error())
	}
	return nil
}

// Ping checks that Redis answers and that the store's format is one this
// package reads, marking it with FormatVersion when it has no format or a
// lower one (checkFormat): a store written by a newer memex is refused
// with a *FormatError.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return s.wrap(ctx, "ping", err)
	}
	return s.checkFormat(ctx)
}

// wrap maps an error at the go-redis boundary to the core sentinels; no
// go-redis type escapes (only its message text, which names no request
// content).
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range []error{core.ErrNotFound, core.ErrInvalid, core.ErrConflict, core.ErrUnavailable, core.ErrTooLarge, core.ErrForbidden} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("redis: %s: %w", op, err)
		}
	}
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("redis: %s: %w", op, core.ErrNotFound)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("redis: %s: %w: %w", op, core.ErrUnavailable, cerr)
	}
	return fmt.Errorf("redis: %s: %w (%s)", op, core.ErrUnavailable, classify(err))
}

// classify names the kind of a Redis failure for the error message.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		return "connection lost"
	case errors.Is(err, redis.ErrPoolTimeout):
		return "connection pool timeout"
	case errors.Is(err, redis.ErrClosed):
		return "client closed"
	}
	msg := err.Error()
	for _, p := range []string{"CLUSTERDOWN", "LOADING", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "OOM", "NOSCRIPT"} {
		if strings.HasPrefix(msg, p) {
			return p
		}
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ensureProject registers project in the project set (once per Store).
func (s *Store) ensureProject(ctx context.Context, project string) error {
	if _, ok := s.known.Load(project); ok {
		return nil
	}
	if err := s.rdb.SAdd(ctx, s.k.projects(), project).Err(); err != nil {
		return s.wrap(ctx, "register project", err)
	}
	s.known.Store(project, true)
	return nil
}
