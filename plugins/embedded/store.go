package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/retrieval"
	"github.com/memex-dev/memex/trust"
	"github.com/memex-dev/memex/trust/ledger"
)

// SchemaVersion is the on-disk schema this package writes. A store written
// by a newer memex is refused rather than misread; a version 1 store is
// upgraded when opened (upgrade.go).
const SchemaVersion = 2

// initialMmapSize is the address space reserved for the file (virtual
// memory only; the file itself grows as needed).
const initialMmapSize = 1 << 30

// DefaultLockTimeout is how long an operation waits for another process to
// release the store.
const DefaultLockTimeout = 5 * time.Second

// Compile-time checks of the capabilities the store implements.
var (
	_ core.MemoryPlugin     = (*Store)(nil)
	_ core.Getter           = (*Store)(nil)
	_ core.Lister           = (*Store)(nil)
	_ core.Deleter          = (*Store)(nil)
	_ core.Patcher          = (*Store)(nil)
	_ core.Importer         = (*Store)(nil)
	_ core.Expirer          = (*Store)(nil)
	_ core.Statser          = (*Store)(nil)
	_ core.Pinger           = (*Store)(nil)
	_ core.CandidateBatcher = (*Store)(nil)
	_ core.RunRecorder      = (*Store)(nil)
	_ io.Closer             = (*Store)(nil)
)

// Option configures a Store.
type Option func(*config)

type config struct {
	clock       func() time.Time
	logger      *slog.Logger
	params      trust.Params
	lockTimeout time.Duration
	keepOpen    bool
	auditKeep   int // entries the audit log keeps per project (AuditKeep)
	buildStep   int // entries a statistics build reads at most per open or write (buildStepEntries)
	buildChunk  int // entries a statistics build reads per transaction of its own (buildChunkEntries)
	expireChunk int // list keys one transaction of Expire examines (expireChunkKeys)
}

// WithClock injects the clock used for timestamps, freshness and expiry.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithLogger sets the logger (silent by default).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithTrustParams sets the trust model's parameters. The default is
// trust.DefaultParams with CountCreator true (SPEC §5.1: the creating run's
// own --verify pass counts in the embedded store).
func WithTrustParams(p trust.Params) Option { return func(c *config) { c.params = p } }

// WithLockTimeout sets how long an operation waits for another process that
// holds the store (default 5 s).
func WithLockTimeout(d time.Duration) Option { return func(c *config) { c.lockTimeout = d } }

// WithKeepOpen holds the file open (and so locked against other processes)
// for the Store's lifetime: exclusive mode, for a long-lived single process
// such as memex serve.
func WithKeepOpen() Option { return func(c *config) { c.keepOpen = true } }

// WithAuditKeep sets how many audit entries are kept per project (default
// AuditKeep; older ones are pruned).
func WithAuditKeep(n int) Option { return func(c *config) { c.auditKeep = n } }

// Store is the embedded memory store. It is safe for concurrent use.
type Store struct {
	core.LocalGrader // TaskGrade

	path     string
	cfg      config
	ledger   *ledger.Ledger
	analyzer *retrieval.Analyzer
	scorer   *retrieval.Scorer
	log      *slog.Logger

	mu        sync.Mutex
	db        *bolt.DB // the open handle (always set in keep-open mode)
	dbRW      bool
	refs      int
	wantWrite int
	changed   chan struct{} // closed and replaced when the handle closes
	closed    bool

	statsBuilt atomic.Int64 // entries read by statistics build steps (tests)
}

// Open opens (creating if needed) the store at path.
func Open(path string, opts ...Option) (*Store, error) {
	p := trust.DefaultParams()
	p.CountCreator = true
	cfg := config{clock: time.Now, params: p, lockTimeout: DefaultLockTimeout, buildStep: buildStepEntries, buildChunk: buildChunkEntries,
		expireChunk: expireChunkKeys}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.lockTimeout <= 0 {
		cfg.lockTimeout = DefaultLockTimeout
	}
	a := retrieval.NewAnalyzer()
	s := &Store{
		path:     path,
		cfg:      cfg,
		ledger:   ledger.New(trust.New(cfg.params)),
		analyzer: a,
		scorer:   retrieval.NewScorer(a, retrieval.DefaultParams()),
		log:      cfg.logger.With("component", "embedded"),
		changed:  make(chan struct{}),
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("embedded: create directory of %s: %w", path, err)
		}
	}
	if !cfg.keepOpen {
		// The common case, every memex process: a read-only check (shared
		// lock, no freelist load, no commit) instead of a write.
		ok, err := s.initialized()
		if err != nil {
			return nil, err
		}
		if ok {
			return s, nil
		}
	}
	db, err := s.openDB(context.Background(), false)
	if err != nil {
		return nil, err
	}
	upgraded, err := s.prepare(db)
	if err != nil {
		s.closeDB(db)
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	if upgraded {
		// The pages of the older schema are free: give them back (in
		// either mode, before the Store holds a handle).
		s.closeDB(db)
		if _, err := s.compact(context.Background()); err != nil {
			s.log.Warn("compact the upgraded store", "error", err)
		}
		if !cfg.keepOpen {
			return s, nil
		}
		if db, err = s.openDB(context.Background(), false); err != nil {
			return nil, err
		}
	}
	if cfg.keepOpen {
		// A long-lived store (memex serve) commits concurrent writers
		// together: one fsync'd commit for every write within 2 ms.
		db.MaxBatchDelay = 2 * time.Millisecond
		s.db, s.dbRW = db, true
		return s, nil
	}
	s.closeDB(db)
	return s, nil
}

// prepare brings the file open read-write in db to the current schema:
// a version 1 store is upgraded (it reports whether), what is missing is
// created (initSchema).
func (s *Store) prepare(db *bolt.DB) (bool, error) {
	var version int
	if err := db.View(func(tx *bolt.Tx) (err error) {
		version, err = storedVersion(tx)
		return err
	}); err != nil {
		return false, err
	}
	if version == 1 {
		if err := s.upgradeV1(db); err != nil {
			return false, fmt.Errorf("upgrade from schema 1: %w", err)
		}
		s.log.Info("upgraded store to schema 2", "path", s.path)
	}
	return version == 1, db.Update(s.initSchema)
}

// initialized reports whether the file exists with every bucket and the
// current schema version, checked in a read-only open. When it answers
// false (no file yet, a bucket missing, an older or unreadable version),
// Open takes the read-write path, which creates what is missing, upgrades
// a version 1 store or reports the problem; a file that cannot be opened
// (locked, corrupt) is an error.
func (s *Store) initialized() (bool, error) {
	if st, err := os.Stat(s.path); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return false, nil
	}
	db, err := s.openDB(context.Background(), true)
	if err != nil {
		return false, err
	}
	defer s.closeDB(db)
	return db.View(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				return errors.New("missing bucket")
			}
		}
		if v, err := storedVersion(tx); err != nil || v != SchemaVersion {
			return errors.New("not the current schema")
		}
		return nil
	}) == nil, nil
}

// Path returns the store's file.
func (s *Store) Path() string { return s.path }

// Name is the plugin name.
func (s *Store) Name() string { return "embedded" }

// Close releases the store. In keep-open mode it closes the file; otherwise
// it only marks the Store closed (no file is held between operations).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cfg.keepOpen && s.db != nil {
		err := s.db.Close()
		s.db = nil
		if err != nil {
			return fmt.Errorf("embedded: close %s: %w", s.path, err)
		}
	}
	return nil
}

// openDB opens the database file, taking bbolt's file lock (shared when
// readOnly, else exclusive). It first queues at the gate (see lockGate), so
// that processes take turns instead of racing for bbolt's lock; the gate is
// released as soon as the file is open.
func (s *Store) openDB(ctx context.Context, readOnly bool) (*bolt.DB, error) {
	deadline := time.Now().Add(s.cfg.lockTimeout)
	gate, err := s.lockGate(ctx)
	if err != nil {
		return nil, err
	}
	if gate != nil {
		defer func() { _ = gate.Close() }()
	}
	wait := time.Until(deadline)
	if wait < 50*time.Millisecond {
		wait = 50 * time.Millisecond
	}
	return s.openFile(readOnly, wait)
}

// growBytes is how far beyond its pages a growing file is extended (bbolt's
// AllocSize, 16 MB by default: with the address space reserved up front,
// every growth would leave that much unused at the end of the file).
const growBytes = 1 << 20

// openFile opens the database file, waiting up to wait for bbolt's file
// lock; the caller holds the gate.
func (s *Store) openFile(readOnly bool, wait time.Duration) (*bolt.DB, error) {
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{
		Timeout:  wait,
		ReadOnly: readOnly,
		// Reserve address space up front so a growing file is not
		// remapped (every remap copies the nodes of the open transaction).
		InitialMmapSize: initialMmapSize,
		FreelistType:    s.freelistType(),
	})
	if err == nil {
		db.AllocSize = growBytes
		return db, nil
	}
	switch {
	case errors.Is(err, bolterr.ErrTimeout):
		return nil, s.lockedError()
	case errors.Is(err, bolterr.ErrInvalid), errors.Is(err, bolterr.ErrChecksum), errors.Is(err, bolterr.ErrVersionMismatch):
		return nil, fmt.Errorf("embedded: %s is not a memex store or is corrupt: %w", s.path, err)
	case errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("embedded: cannot open %s: permission denied: %w", s.path, err)
	}
	return nil, fmt.Errorf("embedded: cannot open %s (not a memex store, corrupt or unreadable): %w", s.path, err)
}

func (s *Store) lockedError() error {
	return fmt.Errorf("embedded: store %s is locked by another process (waited %s): %w", s.path, s.cfg.lockTimeout, core.ErrUnavailable)
}

// freelistType is how bbolt keeps the free pages of a read-write handle
// in memory. A handle opened for one operation loads the freelist for one
// or two commits: the array loads as one copy, where the map (built for a
// long-lived handle that allocates often) costs milliseconds to build on a
// large store. Both keep the same format on disk.
func (s *Store) freelistType() bolt.FreelistType {
	if s.cfg.keepOpen {
		return bolt.FreelistMapType
	}
	return bolt.FreelistArrayType
}

func (s *Store) closeDB(db *bolt.DB) {
	if err := db.Close(); err != nil {
		s.log.Warn("close store", "error", err)
	}
}

// acquire returns an open handle for one operation and its release func.
// In the default mode the handle is shared by the operations in flight in
// this process and closed (releasing the file lock) when the last finishes;
// read-only operations open the file with a shared lock when no writer is
// in flight.
func (s *Store) acquire(ctx context.Context, write bool) (*bolt.DB, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	waiting := false
	defer func() {
		if waiting {
			s.mu.Lock()
			s.wantWrite--
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("embedded: store %s is closed: %w", s.path, core.ErrUnavailable)
		}
		if s.cfg.keepOpen {
			db := s.db
			s.mu.Unlock()
			return db, func() {}, nil
		}
		if s.db != nil && (s.dbRW || (!write && s.wantWrite == 0)) {
			s.refs++
			db := s.db
			s.mu.Unlock()
			return db, s.release, nil
		}
		if s.db == nil {
			rw := write || s.wantWrite > 0
			db, err := s.openDB(ctx, !rw)
			if err != nil {
				s.mu.Unlock()
				return nil, nil, err
			}
			s.db, s.dbRW, s.refs = db, rw, 1
			s.mu.Unlock()
			return db, s.release, nil
		}
		// A read-only handle is open and a writer needs the file: wait
		// for the readers in flight to finish.
		if write && !waiting {
			waiting = true
			s.wantWrite++
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (s *Store) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs > 0 {
		return
	}
	s.closeDB(s.db)
	s.db = nil
	close(s.changed)
	s.changed = make(chan struct{})
}

// view runs fn in one read-only transaction.
func (s *Store) view(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	db, release, err := s.acquire(ctx, false)
	if err != nil {
		return fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer release()
	if err := db.View(fn); err != nil {
		return fmt.Errorf("embedded: %s: %w", op, err)
	}
	return nil
}

// update runs fn in one read-write transaction; it returns after the
// commit is on disk.
func (s *Store) update(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	db, release, err := s.acquire(ctx, true)
	if err != nil {
		return fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer release()
	commit := db.Update
	if s.cfg.keepOpen {
		// Group commit: concurrent writers share a transaction (bbolt may
		// run fn again alone if another fn of the batch fails; every fn
		// here is idempotent within its transaction).
		commit = db.Batch
	}
	if err := commit(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		packBuckets(tx)
		if err := fn(tx); err != nil {
			return err
		}
		return s.statsBuildStep(tx, s.cfg.buildStep, buildStepTime)
	}); err != nil {
		return fmt.Errorf("embedded: %s: %w", op, err)
	}
	return nil
}

// packBuckets fills the pages of the buckets keyed by doc id and of the
// audit log: doc ids only grow (the docs bucket's sequence), and a
// project's audit entries come in time order, so new keys are appended,
// and bbolt, which splits a full page at FillPercent (one half by
// default), would leave every page half empty for good.
func packBuckets(tx *bolt.Tx) {
	for _, name := range [][]byte{bDocs, bQA, bTerms, bAudit} {
		if b := tx.Bucket(name); b != nil {
			b.FillPercent = 1
		}
	}
}

// Ping checks that the store opens and has a readable schema.
func (s *Store) Ping(ctx context.Context) error {
	return s.view(ctx, "ping", func(tx *bolt.Tx) error {
		return checkVersion(tx)
	})
}

// initSchema creates what is missing in a read-write open. A store
// without kept statistics (an older file) starts their build, and a
// build in progress takes a bounded step (agg.go).
func (s *Store) initSchema(tx *bolt.Tx) error {
	startBuild := statsOutdated(tx)
	if err := createBuckets(tx, allBuckets...); err != nil {
		return err
	}
	if meta := tx.Bucket(bMeta); meta.Get(keySchema) == nil {
		if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
	}
	if err := checkVersion(tx); err != nil {
		return err
	}
	if startBuild {
		if err := startStatsBuild(tx); err != nil {
			return fmt.Errorf("start the build of the project statistics: %w", err)
		}
	}
	return s.statsBuildStep(tx, s.cfg.buildStep, buildStepTime)
}

// statsBuildStep advances a build of the statistics in progress by up to
// max entries, in tx, and none more once budget (if positive) has passed.
func (s *Store) statsBuildStep(tx *bolt.Tx, max int, budget time.Duration) error {
	n, err := buildStatsStep(tx, max, budget)
	s.statsBuilt.Add(int64(n))
	if err != nil {
		return fmt.Errorf("build the project statistics: %w", err)
	}
	return nil
}

// checkVersion refuses a file without a schema version, or with a newer
// one than this memex writes.
func checkVersion(tx *bolt.Tx) error {
	v, err := storedVersion(tx)
	switch {
	case err != nil:
		return err
	case v == 0:
		return errors.New("not a memex store (no schema version)")
	case v > SchemaVersion:
		return fmt.Errorf("store schema version %d is newer than this memex supports (%d): upgrade memex", v, SchemaVersion)
	}
	return nil
}

// storedVersion reads the schema version of the file: 0 for a file without
// one (new or empty).
func storedVersion(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(bMeta)
	if meta == nil || meta.Get(keySchema) == nil {
		return 0, nil
	}
	v, err := strconv.Atoi(string(meta.Get(keySchema)))
	if err != nil {
		return 0, errors.New("not a memex store (unreadable schema version)")
	}
	return v, nil
}

// createBuckets creates those of names that are missing.
func createBuckets(tx *bolt.Tx, names ...[]byte) error {
	for _, name := range names {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// dropBuckets deletes those of names that exist.
func dropBuckets(tx *bolt.Tx, names ...[]byte) error {
	for _, name := range names {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterr.ErrBucketNotFound) {
			return fmt.Errorf("drop bucket %s: %w", name, err)
		}
	}
	return nil
}
